-- Reaction slots are kept by the events engine with the reactions holding
-- them (store/embedded/lsm: written and freed in the reaction's own
-- batch, derived from the stored reactions when an older engine layout is
-- converted), so the claims table of 0210 is no longer read.
DROP TABLE reactions;
