package postgres

// AnalyzeStepForTest reports the number of stored events since the last
// analysis round began that starts the next one (analyze.go), and whether
// a round is running.
func (s *Store) AnalyzeStepForTest() (next int64, running bool) {
	return s.analyzeAt.Load(), s.analyzing.Load()
}
