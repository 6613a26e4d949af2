-- Product feedback (kind 42000), operator-wide: never a community's event,
-- read only by the operators' console. community_id attributes it; it does
-- not scope it.

-- +goose Up
CREATE TABLE product_feedback (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id           text   NOT NULL UNIQUE,
    community_id uuid   NOT NULL,
    host         text   NOT NULL,
    pubkey       text   NOT NULL,
    content      text   NOT NULL,
    tags         jsonb  NOT NULL,
    created_at   bigint NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO _operator_global_tables (table_name, reason) VALUES
    ('product_feedback', 'product feedback for the operator; never tenant-observable; community_id is an attribution label only');
GRANT SELECT, INSERT ON product_feedback TO buzz_app;

-- +goose Down
REVOKE ALL ON product_feedback FROM buzz_app;
DELETE FROM _operator_global_tables WHERE table_name = 'product_feedback';
DROP TABLE IF EXISTS product_feedback;
