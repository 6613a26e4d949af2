-- Schema version 70: NIP-29 group flags and non-UUID group ids (versions
-- 70-79 belong to NIP-29 interop).
--
-- slug: the channel's NIP-29 group id when it is not a UUID (NULL for
-- UUID ids, whose id column is the UUID itself). closed, restricted and
-- hidden are NIP-29's flags; private is visibility = 'private'. A channel
-- that was private before this version was private, closed (joins
-- refused), restricted (non-members cannot post) and hidden (its state
-- events are read under the channel's rules), so it keeps all four.
ALTER TABLE channels ADD COLUMN slug TEXT;
ALTER TABLE channels ADD COLUMN closed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE channels ADD COLUMN restricted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE channels ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;
UPDATE channels SET closed = 1, restricted = 1, hidden = 1 WHERE visibility = 'private';
