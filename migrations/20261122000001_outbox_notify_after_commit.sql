-- The relay is now woken by the application, after commit, instead of by an insert trigger.
--
-- Why: a transaction that calls NOTIFY takes Postgres' cluster-wide notification lock at commit
-- and holds it until the commit is flushed to the WAL, so every transaction that wrote an outbox
-- row committed one at a time — across all databases of the server, with no group commit. On the
-- 2-core reference machine that capped such commits at ~700/s (a one-insert transaction runs at
-- ~10 000/s without it; see the README's Performance section).
--
-- Now the application sends `SELECT pg_notify('order_service_outbox', '')` as a statement of its
-- own right after a commit that applied a change (store::outbox::announce): it holds the lock only
-- for an instant and flushes nothing. The relay still LISTENs on the same channel, and still polls
-- every OUTBOX_POLL_MS for a notification lost to a crash between the commit and the NOTIFY.
DROP TRIGGER outbox_notify ON outbox;
DROP FUNCTION outbox_notify();
