-- no-transaction
-- An order's events a page at a time, in outbox id order (GET /v1/orders/{id}/events,
-- docs/contract.md "Pages"): `WHERE order_id = $1 AND id > $2 ORDER BY id LIMIT $3` reads one
-- page of this index, however many events the order wrote. Built concurrently, so the relay and
-- every writer go on meanwhile (docs/operations/upgrading.md "Migrations both releases
-- survive"); 0.2.0 never reads it and its writes keep it. Declared by the next migration.
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_order_id_id_idx ON outbox (order_id, id);
