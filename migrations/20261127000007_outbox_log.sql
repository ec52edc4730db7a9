-- The outbox becomes a log (docs/messaging.md "The outbox as a log"): rows are appended once and
-- the relay reads them in order behind a cursor, writing nothing per event. The expand step:
--
-- * `outbox.pos`: the row's position, `greatest(the writer's transaction id, the order's
--   last_event_pos)`. The relay reads `(pos, id) > cursor AND pos < xmin(its snapshot)`: every
--   row below the snapshot's xmin belongs to a finished transaction (a row's pos is at least its
--   writer's xid), so no row can appear behind the cursor later. An xid alone would not keep an
--   order's events in version order: a transaction takes its xid at its first write, possibly
--   before it waits for an order's row that another transaction then changes, and would write
--   the order's later version under an earlier xid.
-- * `orders.last_event_pos`: the pos of the order's latest event, written back by the statement
--   that writes the event, so the next event of the order never sorts before it. Not indexed:
--   the order's update stays HOT-eligible.
-- * A trigger gives a position to every row inserted without one: 0.2.0's writers, which do not
--   know the column, during a rolling upgrade or after a rollback. It computes the same value as
--   0.3.0's statements and writes it back to the order (the row the writer's statement holds).
--   0.3.0 always sets pos, so the trigger's `WHEN` skips it without calling the function.
-- * `outbox_publications`: the cursor, as an append-only log of the relay's batches, one row per
--   batch (never per event): the last row is where the relay stands, and each row says when the
--   events up to it were published (what GET /v1/orders/{id}/events shows as `published_at`).
-- * `outbox_relay_mode.marks_published`: while true, the relay also sets `published_at` on each
--   row it publishes, as 0.2.0 does, so that 0.2.0 relays running beside it (or after a rollback)
--   skip those rows. True on a database that holds data already (an earlier release served it),
--   false on a new one. `order-service outbox stop-marking` ends it once no 0.2.0 can run again;
--   `start-marking` marks what the cursor passed and starts again, before a rollback
--   (docs/operations/upgrading.md "Upgrading: the outbox as a log").
--
-- Rows unpublished when this runs get the position 1 (below every transaction's), so the
-- relay's first read takes them in id order, as 0.2.0 would. This migration's `ALTER TABLE`
-- waits for every transaction writing the outbox, so a row without a position cannot commit
-- after it: later ones go through the trigger. Rows published before it keep no position and are
-- pruned by `published_at`, as before.
--
-- An expand step: 0.2.0 (whose newest migration is 20261126000001) reads none of this, and its
-- inserts are positioned by the trigger.
ALTER TABLE outbox ADD COLUMN pos xid8;
ALTER TABLE orders ADD COLUMN last_event_pos xid8;

CREATE FUNCTION outbox_position() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.pos := pg_current_xact_id();
    IF NEW.order_id IS NOT NULL THEN
        UPDATE orders SET last_event_pos = greatest(last_event_pos, NEW.pos)
        WHERE id = NEW.order_id
        RETURNING last_event_pos INTO NEW.pos;
        NEW.pos := coalesce(NEW.pos, pg_current_xact_id());
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER outbox_position BEFORE INSERT ON outbox
    FOR EACH ROW WHEN (NEW.pos IS NULL) EXECUTE FUNCTION outbox_position();

UPDATE outbox SET pos = '1' WHERE published_at IS NULL;

CREATE TABLE outbox_publications (
    through_pos  xid8        NOT NULL,
    through_id   bigint      NOT NULL,
    events       integer     NOT NULL,
    published_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT outbox_publications_pkey PRIMARY KEY (through_pos, through_id)
);

-- Retention finds the newest batch published before its bound here (one probe).
CREATE INDEX outbox_publications_published_at_idx ON outbox_publications (published_at);

-- The start: below every position.
INSERT INTO outbox_publications (through_pos, through_id, events) VALUES ('0', 0, 0);

CREATE TABLE outbox_relay_mode (
    relay           text    NOT NULL DEFAULT 'outbox',
    marks_published boolean NOT NULL,
    changed_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT outbox_relay_mode_pkey PRIMARY KEY (relay),
    CONSTRAINT outbox_relay_mode_one_row CHECK (relay = 'outbox')
);

INSERT INTO outbox_relay_mode (marks_published)
SELECT EXISTS (SELECT 1 FROM orders) OR EXISTS (SELECT 1 FROM outbox)
    OR EXISTS (SELECT 1 FROM dead_letters);

-- What waits for the relay, for operators (and the tests): the rows after the cursor that no
-- relay of 0.2.0 has marked. `SELECT count(*) FROM outbox_waiting` is the backlog.
CREATE VIEW outbox_waiting AS
SELECT outbox.id, outbox.event_id, outbox.event_type, outbox.order_id, outbox.order_version,
       outbox.exchange, outbox.created_at, outbox.pos
FROM outbox,
     (SELECT through_pos, through_id FROM outbox_publications
      ORDER BY through_pos DESC, through_id DESC LIMIT 1) AS cursor
WHERE (outbox.pos, outbox.id) > (cursor.through_pos, cursor.through_id)
  AND outbox.published_at IS NULL;

INSERT INTO schema_compatibility (migration, oldest_compatible, release)
VALUES (20261127000007, 20261126000001, '0.3.0');
