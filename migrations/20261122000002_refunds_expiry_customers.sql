-- Refunds, payment expiry and orders by customer. Safe on a database that already holds orders:
-- every new column has a default that is true of every existing row, and no existing row breaks
-- a new constraint.

-- Money that went back is an outgoing row of the same ledger: a refund's id shares the transfer
-- ids' unique space (transfers_pkey), so one id is either a payment or a refund, never both.
-- Existing rows are payments.
ALTER TABLE transfers
    ADD COLUMN direction text NOT NULL DEFAULT 'in',
    ADD CONSTRAINT transfers_direction_known CHECK (direction IN ('in', 'out'));

-- Sum of the order's outgoing rows, maintained in the same transaction as each refund insert.
-- Existing orders have refunded nothing. refund_required keeps its meaning for them: for a
-- cancelled order it was on iff money was held (paid > 0), otherwise iff paid > amount, which is
-- exactly `refund_due_minor > 0` with nothing refunded.
ALTER TABLE orders
    ADD COLUMN refunded_minor bigint NOT NULL DEFAULT 0,
    ADD CONSTRAINT orders_refunded_non_negative CHECK (refunded_minor >= 0),
    -- Invariant 2: never more goes back than came in.
    ADD CONSTRAINT orders_refunded_within_paid CHECK (refunded_minor <= paid_minor);

-- History gains the refund kind, and the expiry timer as a cause.
ALTER TABLE order_transitions
    DROP CONSTRAINT order_transitions_kind_known,
    ADD CONSTRAINT order_transitions_kind_known
        CHECK (kind IN ('created', 'payment_recorded', 'paid', 'shipped', 'cancelled', 'refund_recorded')),
    DROP CONSTRAINT order_transitions_cause_known,
    ADD CONSTRAINT order_transitions_cause_known CHECK (cause_source IN ('api', 'amqp', 'timer'));

-- The expiry sweep reads the oldest pending orders: a partial index keeps that cheap however
-- many paid, shipped or cancelled orders the table holds.
CREATE INDEX orders_pending_created_at_idx ON orders (created_at, id) WHERE status = 'PENDING_PAYMENT';

-- GET /v1/orders?customer_id=…[&status=…]: newest first within one customer. A status filter on
-- top reads this index and skips the other statuses of that one customer's orders.
CREATE INDEX orders_customer_created_at_id_idx ON orders (customer_id, created_at DESC, id DESC);
