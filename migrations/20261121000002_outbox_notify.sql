-- Wake the outbox relay as soon as events commit (NOTIFY is delivered at commit, and one
-- statement's notifications coalesce), so it need not poll busily. The relay still polls slowly
-- as a fallback for notifications lost while it was disconnected.
CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('order_service_outbox', '');
    RETURN NULL;
END;
$$;

CREATE TRIGGER outbox_notify
    AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();

-- Pruning scans published rows by age.
CREATE INDEX outbox_published_at_idx ON outbox (published_at) WHERE published_at IS NOT NULL;
