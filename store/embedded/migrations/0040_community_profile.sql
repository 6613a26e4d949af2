-- A community's own self-description (NIP-11 name, description, icon,
-- contact), served for its hosts only; '' falls back to the relay's.
ALTER TABLE communities ADD COLUMN profile_name TEXT NOT NULL DEFAULT '';
ALTER TABLE communities ADD COLUMN profile_description TEXT NOT NULL DEFAULT '';
ALTER TABLE communities ADD COLUMN profile_icon TEXT NOT NULL DEFAULT '';
ALTER TABLE communities ADD COLUMN profile_contact TEXT NOT NULL DEFAULT '';
