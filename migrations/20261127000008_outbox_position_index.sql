-- no-transaction
-- The relay's read, `(pos, id) > cursor AND pos < xmin ORDER BY pos, id LIMIT n`, is one range of
-- this index however large the outbox (docs/messaging.md "The outbox as a log"). Built
-- concurrently (docs/operations/upgrading.md "Migrations both releases survive"); 0.2.0 never
-- reads it and its writes keep it. Declared by the next migration.
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_pos_id_idx ON outbox (pos, id);
