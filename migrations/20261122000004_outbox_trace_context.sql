-- Each outbox row keeps the W3C trace context of the request or message that caused its change
-- (README "Tracing"): the relay sends it on as the published message's `traceparent` and
-- `tracestate` headers, so the event's consumers continue that trace. Safe on a database that
-- already holds events: the columns are nullable, and the relay starts a new trace for a row
-- written before them.
ALTER TABLE outbox
    ADD COLUMN traceparent text,
    ADD COLUMN tracestate text,
    -- Version 00, lowercase hex, as the service writes it.
    ADD CONSTRAINT outbox_traceparent_w3c
        CHECK (traceparent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'),
    -- The service cuts a longer tracestate to 512 characters, as W3C allows.
    ADD CONSTRAINT outbox_tracestate_bounded CHECK (octet_length(tracestate) <= 512),
    ADD CONSTRAINT outbox_tracestate_with_traceparent
        CHECK (tracestate IS NULL OR traceparent IS NOT NULL);
