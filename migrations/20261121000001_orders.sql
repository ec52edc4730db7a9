-- The order-service schema. Idempotency lives in the data model itself:
--   * every state change of an order is a guarded UPDATE on `orders` (status + version);
--   * money lands in `transfers`, whose primary key is the transfer id;
--   * every successful mutating request writes exactly one `order_transitions` row, and that row
--     carries the request's Idempotency-Key and fingerprint under UNIQUE (client_id, idempotency_key).
-- There is deliberately no table of processed message ids.

CREATE TABLE orders (
    id                  uuid        NOT NULL,
    customer_id         text        NOT NULL,
    amount_minor        bigint      NOT NULL,
    currency            text        NOT NULL,
    status              text        NOT NULL,
    -- 1 at creation, +1 on every change (transition or recorded payment); the ETag.
    version             bigint      NOT NULL,
    -- Sum of this order's ledger rows, maintained in the same transaction as each insert.
    paid_minor          bigint      NOT NULL DEFAULT 0,
    refund_required     boolean     NOT NULL DEFAULT false,
    carrier             text,
    tracking_number     text,
    cancellation_reason text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT orders_pkey PRIMARY KEY (id),
    CONSTRAINT orders_customer_id_length CHECK (char_length(customer_id) BETWEEN 1 AND 64),
    CONSTRAINT orders_amount_range CHECK (amount_minor BETWEEN 1 AND 1000000000000),
    CONSTRAINT orders_currency_format CHECK (currency ~ '^[A-Z]{3}$'),
    CONSTRAINT orders_status_known CHECK (status IN ('PENDING_PAYMENT', 'PAID', 'SHIPPED', 'CANCELLED')),
    CONSTRAINT orders_version_positive CHECK (version >= 1),
    CONSTRAINT orders_paid_non_negative CHECK (paid_minor >= 0),
    -- Invariant 3: PAID or SHIPPED implies the amount was covered.
    CONSTRAINT orders_paid_before_paid_status CHECK (status NOT IN ('PAID', 'SHIPPED') OR paid_minor >= amount_minor),
    CONSTRAINT orders_shipment_complete CHECK ((carrier IS NULL) = (tracking_number IS NULL))
);

-- Keyset pagination: newest first, ties broken by id.
CREATE INDEX orders_created_at_id_idx ON orders (created_at DESC, id DESC);
CREATE INDEX orders_status_created_at_id_idx ON orders (status, created_at DESC, id DESC);

-- The ledger. A transfer is a fact: it is recorded whatever the order's status.
CREATE TABLE transfers (
    transfer_id  text        NOT NULL,
    order_id     uuid        NOT NULL,
    amount_minor bigint      NOT NULL,
    currency     text        NOT NULL,
    source       text        NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT transfers_pkey PRIMARY KEY (transfer_id),
    CONSTRAINT transfers_order_fkey FOREIGN KEY (order_id) REFERENCES orders (id),
    CONSTRAINT transfers_transfer_id_length CHECK (char_length(transfer_id) BETWEEN 1 AND 128),
    CONSTRAINT transfers_amount_range CHECK (amount_minor BETWEEN 1 AND 1000000000000),
    CONSTRAINT transfers_currency_format CHECK (currency ~ '^[A-Z]{3}$'),
    CONSTRAINT transfers_source_known CHECK (source IN ('api', 'amqp'))
);

CREATE INDEX transfers_order_id_idx ON transfers (order_id, received_at, transfer_id);

-- History: one row per order version. The row of a REST request carries its Idempotency-Key and
-- request fingerprint; the row of an AMQP event carries the event id (for tracing, not dedup).
CREATE TABLE order_transitions (
    order_id            uuid        NOT NULL,
    version             bigint      NOT NULL,
    kind                text        NOT NULL,
    from_status         text,
    to_status           text        NOT NULL,
    -- The ledger entry this change recorded (payment_recorded / paid).
    transfer_id         text,
    cause_source        text        NOT NULL,
    client_id           text,
    idempotency_key     text,
    request_fingerprint text,
    event_id            text,
    at                  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT order_transitions_pkey PRIMARY KEY (order_id, version),
    CONSTRAINT order_transitions_order_fkey FOREIGN KEY (order_id) REFERENCES orders (id),
    CONSTRAINT order_transitions_transfer_fkey FOREIGN KEY (transfer_id) REFERENCES transfers (transfer_id),
    CONSTRAINT order_transitions_idempotency_key UNIQUE (client_id, idempotency_key),
    CONSTRAINT order_transitions_kind_known
        CHECK (kind IN ('created', 'payment_recorded', 'paid', 'shipped', 'cancelled')),
    CONSTRAINT order_transitions_cause_known CHECK (cause_source IN ('api', 'amqp')),
    CONSTRAINT order_transitions_api_cause
        CHECK (cause_source <> 'api' OR (client_id IS NOT NULL AND idempotency_key IS NOT NULL AND request_fingerprint IS NOT NULL)));

-- Invariant 1: each order changes into each status at most once.
CREATE UNIQUE INDEX order_transitions_status_change_once
    ON order_transitions (order_id, to_status)
    WHERE from_status IS DISTINCT FROM to_status;

-- Transactional outbox: one row per emitted event, written in the transaction of the change it
-- reports. The relay publishes rows in id order and stamps published_at after the broker confirms.
CREATE TABLE outbox (
    id            bigint      GENERATED ALWAYS AS IDENTITY,
    event_id      uuid        NOT NULL,
    event_type    text        NOT NULL,
    order_id      uuid        NOT NULL,
    order_version bigint      NOT NULL,
    payload       jsonb       NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    published_at  timestamptz,
    CONSTRAINT outbox_pkey PRIMARY KEY (id),
    CONSTRAINT outbox_event_id_key UNIQUE (event_id)
);

CREATE INDEX outbox_unpublished_idx ON outbox (id) WHERE published_at IS NULL;
