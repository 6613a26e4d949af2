package lsm

// LogExtendStep is how far ahead of its writes a log file's size is set.
const LogExtendStep = logExtendStep
