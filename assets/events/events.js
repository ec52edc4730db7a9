// Renders the AsyncAPI document of order-service (/asyncapi.json) with the vendored AsyncAPI React
// component (assets/asyncapi/; docs/messaging.md "The messaging contract: AsyncAPI"). A file of its
// own rather than an inline script, so the page's Content-Security-Policy allows only this origin's
// scripts.
AsyncApiStandalone.render(
  {
    schema: {
      url: new URL('../asyncapi.json', window.location.href).href,
      requestOptions: { credentials: 'same-origin' },
    },
    config: {
      show: { sidebar: true, info: true, servers: true, operations: true, messages: true, schemas: true, errors: true },
    },
  },
  document.getElementById('asyncapi'),
);
