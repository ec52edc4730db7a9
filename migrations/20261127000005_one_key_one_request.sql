-- One Idempotency-Key is one request, whichever endpoint used it (docs/contract.md
-- "Idempotency keys"). A key lives on the row its request wrote: an order change's history row
-- (`order_transitions`) or a dead-letter action's row (`dead_letter_actions`), each under its own
-- UNIQUE (client_id, idempotency_key). That constraint settles two requests racing into the same
-- table, but not an order command and a dead-letter action racing with one key: each read saw the
-- key free, each wrote into its own table, and both succeeded.
--
-- The trigger below closes that gap. Before a keyed row is inserted into either table it takes a
-- transaction-scoped advisory lock on the key, so two writers of one key take turns, and then
-- looks for the key in the other table. In READ COMMITTED (every transaction of the service's) a
-- statement of a PL/pgSQL function takes a fresh snapshot, so after waiting for the lock it sees
-- what the first writer committed. A key found there is refused as the unique violation the
-- inserting table's own constraint raises (SQLSTATE 23505, that constraint's name): the service
-- already reads it as a lost race, reads the key's holder again and answers as for any reuse of
-- the key (a replay, or 422). Rows without a key (the consumer's and the timer's changes) never
-- call the function.
--
-- An expand step: 0.2.0 (whose newest migration is 20261126000001) writes both tables; its
-- inserts are checked too, and it maps the same constraint names to the same lost race.

CREATE FUNCTION idempotency_key_held_elsewhere() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    held boolean;
BEGIN
    -- The lock's key space is shared with the relays' lease; a collision of the 64-bit hash
    -- with that one constant only makes a writer wait for a relay's batch.
    PERFORM pg_advisory_xact_lock(
        hashtextextended(NEW.client_id || ' ' || NEW.idempotency_key, 20261127));
    IF TG_TABLE_NAME = 'order_transitions' THEN
        SELECT EXISTS (SELECT 1 FROM dead_letter_actions
                       WHERE client_id = NEW.client_id
                         AND idempotency_key = NEW.idempotency_key) INTO held;
    ELSE
        SELECT EXISTS (SELECT 1 FROM order_transitions
                       WHERE client_id = NEW.client_id
                         AND idempotency_key = NEW.idempotency_key) INTO held;
    END IF;
    IF held THEN
        RAISE EXCEPTION 'Idempotency-Key already holds another request'
            USING ERRCODE = 'unique_violation',
                  CONSTRAINT = TG_TABLE_NAME || '_idempotency_key',
                  TABLE = TG_TABLE_NAME;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER order_transitions_key_held_elsewhere
    BEFORE INSERT ON order_transitions
    FOR EACH ROW WHEN (NEW.idempotency_key IS NOT NULL)
    EXECUTE FUNCTION idempotency_key_held_elsewhere();

CREATE TRIGGER dead_letter_actions_key_held_elsewhere
    BEFORE INSERT ON dead_letter_actions
    FOR EACH ROW WHEN (NEW.idempotency_key IS NOT NULL)
    EXECUTE FUNCTION idempotency_key_held_elsewhere();

INSERT INTO schema_compatibility (migration, oldest_compatible, release)
VALUES (20261127000005, 20261126000001, '0.3.0');
