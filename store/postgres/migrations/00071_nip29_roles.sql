-- NIP-29 roles (version 71; versions 70-79 belong to NIP-29 interop).
--
-- channel_members.role accepts any role name a 9000 gives (NIP-29 roles are
-- the relay's to define; a role Buzz does not know grants what member
-- grants), 1 to 64 bytes.

-- +goose Up
ALTER TABLE channel_members ALTER COLUMN role DROP DEFAULT;
ALTER TABLE channel_members ALTER COLUMN role TYPE text USING role::text;
ALTER TABLE channel_members ALTER COLUMN role SET DEFAULT 'member';
ALTER TABLE channel_members ADD CONSTRAINT channel_members_role_check CHECK (length(role) BETWEEN 1 AND 64);

-- +goose Down
DELETE FROM channel_members WHERE role NOT IN ('owner', 'admin', 'member', 'guest', 'bot');
ALTER TABLE channel_members DROP CONSTRAINT IF EXISTS channel_members_role_check;
ALTER TABLE channel_members ALTER COLUMN role DROP DEFAULT;
ALTER TABLE channel_members ALTER COLUMN role TYPE member_role USING role::member_role;
ALTER TABLE channel_members ALTER COLUMN role SET DEFAULT 'member';
