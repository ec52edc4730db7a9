-- no-transaction
-- The same page of an order's events among the rows the relay set aside, which keep their outbox
-- id: `outbox_set_aside` is small on a good day and not on a bad one. Built concurrently, as the
-- outbox's; declared by the next migration.
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_set_aside_order_id_id_idx ON outbox_set_aside (order_id, id);
