-- Outbox rows the relay cannot publish, set aside with the reason (README "Rows the relay sets
-- aside"): a row whose stored JSON does not decode, whose exchange or routing key is not an AMQP
-- short string, or a replayed dead letter the broker returned as unroutable. The relay moves such a
-- row here (deleting it from `outbox` in the statement that inserts it here, in the transaction of
-- its batch), so no relay claims it again and the rows after it are published.
--
-- A table of its own rather than columns on `outbox`: the previous release claims every row of
-- `outbox` without `published_at` and counts them in its backlog, so a row marked in place would
-- still stop that release's relay and keep its lag alert firing while both run side by side. Safe
-- on a database that already holds events, and for the previous release: it never reads this
-- table, and nothing it reads changes.
CREATE TABLE outbox_set_aside (
    -- The row's id and columns as they were in `outbox`.
    id            bigint      NOT NULL,
    event_id      uuid        NOT NULL,
    event_type    text,
    order_id      uuid,
    order_version bigint,
    payload       jsonb,
    exchange      text,
    routing_key   text,
    body          bytea,
    properties    jsonb,
    traceparent   text,
    tracestate    text,
    created_at    timestamptz NOT NULL,
    -- `<class>: <detail>`: `undecodable`, `unaddressable` or `unroutable`, then the cause, cut to
    -- 1 KiB.
    reason        text        NOT NULL,
    set_aside_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT outbox_set_aside_pkey PRIMARY KEY (id),
    CONSTRAINT outbox_set_aside_reason_bounded CHECK (octet_length(reason) <= 1024)
);
