-- A command writes its change with one statement, in autocommit (README "Round trips per
-- command"). A REST request abandoned at its time limit (HTTP_REQUEST_TIMEOUT_MS, answered 503)
-- must leave nothing behind, yet its statement may still be waiting for a lock at the server, and
-- would commit once it got it. So the statement ends by calling this check, after every row it writes: past its
-- caller's deadline — `budget` after the statement started, by the server's clock — it fails with
-- query_canceled, and the statement, its own transaction, writes nothing. A NULL budget (a message,
-- the expiry sweep) never expires.
CREATE FUNCTION order_service_in_time(budget interval) RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF budget IS NOT NULL AND clock_timestamp() > statement_timestamp() + budget THEN
        RAISE EXCEPTION 'the caller''s time limit passed' USING ERRCODE = 'query_canceled';
    END IF;
    RETURN true;
END;
$$;
