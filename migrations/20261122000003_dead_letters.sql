-- Parked dead letters, the actions taken on them, and an outbox that can carry a replayed message
-- (README "Dead letters: find, group, replay, discard"; docs/contract.md#parked-dead-letters).
-- Safe on a database that already holds orders and events: the new tables start empty, and every
-- existing outbox row is an order event, which the new check accepts.

-- One row per distinct dead message. The same message dead-lettered again (after a replay, say) is
-- the same row: `times` + 1, its latest reason and copy, back to 'parked'.
CREATE TABLE dead_letters (
    id                     uuid        NOT NULL,
    -- What makes two dead letters the same message: the SHA-256 of its AMQP message_id, or, for a
    -- message without one, of its routing key and body (domain::DeadLetterIdentity states the rule).
    identity               bytea       NOT NULL,
    message_id             text,
    -- Read from the body when it is an envelope; null when it is not (poison can be anything).
    event_id               text,
    event_type             text,
    -- The routing key the message first arrived with: where a replay sends it.
    routing_key            text        NOT NULL,
    -- `<class>: <detail>`, cut to 1 KiB; the class is derived from it (domain::ReasonClass::of) and
    -- stored so that grouping and the `dead_letters_parked` gauge read one indexed column.
    reason                 text        NOT NULL,
    reason_class           text        NOT NULL,
    -- The original bytes, whatever they are. RabbitMQ bounds a message's size; readers take a
    -- prefix (`substring`), so no page of the listing holds whole bodies.
    body                   bytea       NOT NULL,
    -- What a replay publishes: the original properties without the bookkeeping headers, in the
    -- lossless encoding of `amqp::properties`; `headers` is the same headers as plain JSON.
    properties             jsonb       NOT NULL,
    headers                jsonb       NOT NULL,
    times                  integer     NOT NULL DEFAULT 1,
    status                 text        NOT NULL DEFAULT 'parked',
    first_dead_lettered_at timestamptz NOT NULL DEFAULT now(),
    last_dead_lettered_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT dead_letters_pkey PRIMARY KEY (id),
    CONSTRAINT dead_letters_identity_key UNIQUE (identity),
    CONSTRAINT dead_letters_status_known CHECK (status IN ('parked', 'replayed', 'discarded')),
    CONSTRAINT dead_letters_times_positive CHECK (times >= 1),
    CONSTRAINT dead_letters_reason_bounded CHECK (octet_length(reason) <= 1024)
);

-- GET /v1/dead-letters: newest first, optionally by status.
CREATE INDEX dead_letters_last_id_idx ON dead_letters (last_dead_lettered_at DESC, id DESC);
CREATE INDEX dead_letters_status_last_id_idx ON dead_letters (status, last_dead_lettered_at DESC, id DESC);
-- The summary and the gauge count parked letters by class and type.
CREATE INDEX dead_letters_parked_class_type_idx ON dead_letters (reason_class, event_type)
    WHERE status = 'parked';

-- One row per replay or discard: who (a REST client, or 'cli' for the command line), when, which
-- dead letters, and the request's Idempotency-Key and fingerprint, so that a retry finds the action
-- its first attempt took (the key lives on the action's own row, as an order request's lives on its
-- history row).
CREATE TABLE dead_letter_actions (
    id                  bigint      GENERATED ALWAYS AS IDENTITY,
    action              text        NOT NULL,
    dead_letter_ids     uuid[]      NOT NULL,
    cause_source        text        NOT NULL,
    client_id           text        NOT NULL,
    idempotency_key     text        NOT NULL,
    request_fingerprint text        NOT NULL,
    at                  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT dead_letter_actions_pkey PRIMARY KEY (id),
    CONSTRAINT dead_letter_actions_idempotency_key UNIQUE (client_id, idempotency_key),
    CONSTRAINT dead_letter_actions_action_known CHECK (action IN ('replay', 'discard')),
    CONSTRAINT dead_letter_actions_cause_known CHECK (cause_source IN ('api', 'cli')),
    -- A bulk replay takes at most 1000 dead letters per call (domain::MAX_BULK_REPLAY).
    CONSTRAINT dead_letter_actions_bounded CHECK (cardinality(dead_letter_ids) <= 1000)
);

-- The actions taken on one dead letter, shown with it.
CREATE INDEX dead_letter_actions_dead_letter_ids_idx ON dead_letter_actions USING gin (dead_letter_ids);

-- The outbox also carries raw messages: a replayed dead letter, published as it is to `exchange`
-- with `routing_key` and `properties`. A row is either an order event (the columns it always had)
-- or a raw message (the new ones), never a mix.
ALTER TABLE outbox
    ALTER COLUMN event_type DROP NOT NULL,
    ALTER COLUMN order_id DROP NOT NULL,
    ALTER COLUMN order_version DROP NOT NULL,
    ALTER COLUMN payload DROP NOT NULL,
    ADD COLUMN exchange text,
    ADD COLUMN routing_key text,
    ADD COLUMN body bytea,
    ADD COLUMN properties jsonb,
    ADD CONSTRAINT outbox_order_event_or_raw_message CHECK (
        (event_type IS NOT NULL AND order_id IS NOT NULL AND order_version IS NOT NULL
            AND payload IS NOT NULL
            AND exchange IS NULL AND routing_key IS NULL AND body IS NULL AND properties IS NULL)
        OR (event_type IS NULL AND order_id IS NULL AND order_version IS NULL AND payload IS NULL
            AND exchange IS NOT NULL AND routing_key IS NOT NULL AND body IS NOT NULL
            AND properties IS NOT NULL));
