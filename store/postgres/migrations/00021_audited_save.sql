-- Audited saves (version 21).
--
-- buzz_save_event_audited is buzz_save_event that, when the event is
-- stored (result 0), queues its audit entry in audit_outbox in the same
-- statement — so audited events (NIP-09 deletion requests) stay in the
-- store's group-committed, pipelined batches instead of each taking an
-- interactive transaction. buzz_save_event has bound the transaction to
-- p_community (RLS) before the insert.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION buzz_save_event_audited(
    p_community uuid, p_id bytea, p_pubkey bytea, p_created_at bigint, p_kind integer,
    p_tags jsonb, p_content text, p_sig bytea, p_raw bytea, p_channel uuid,
    p_d_tag text, p_expires_at bigint, p_lock bigint,
    p_tag_names text[], p_tag_values bytea[],
    p_del_ids bytea[], p_del_kinds integer[], p_del_dtags text[], p_del_locks bigint[],
    a_action text, a_actor bytea, a_object text, a_detail jsonb, a_at timestamptz
) RETURNS smallint
LANGUAGE plpgsql AS $$
DECLARE
    code smallint;
BEGIN
    code := buzz_save_event(p_community, p_id, p_pubkey, p_created_at, p_kind, p_tags, p_content, p_sig, p_raw,
        p_channel, p_d_tag, p_expires_at, p_lock, p_tag_names, p_tag_values,
        p_del_ids, p_del_kinds, p_del_dtags, p_del_locks);
    IF code = 0 THEN
        INSERT INTO audit_outbox (community_id, action, actor_pubkey, object_id, detail, created_at)
        VALUES (p_community, a_action, a_actor, a_object, a_detail, a_at);
    END IF;
    RETURN code;
END
$$;
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION buzz_save_event_audited(uuid, bytea, bytea, bigint, integer, jsonb, text, bytea, bytea,
    uuid, text, bigint, bigint, text[], bytea[], bytea[], integer[], text[], bigint[],
    text, bytea, text, jsonb, timestamptz) TO buzz_app;

-- +goose Down
DROP FUNCTION IF EXISTS buzz_save_event_audited(uuid, bytea, bytea, bigint, integer, jsonb, text, bytea, bytea,
    uuid, text, bigint, bigint, text[], bytea[], bytea[], integer[], text[], bigint[],
    text, bytea, text, jsonb, timestamptz);
