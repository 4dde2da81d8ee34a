package retention

// SetBeforeRemove makes prune call f before it removes each file, with the directory it
// prunes and the file's name relative to it (a test swaps a directory for a link there);
// the returned func puts the default back.
func SetBeforeRemove(f func(dir, rel string)) (restore func()) {
	old := beforeRemove
	beforeRemove = f
	return func() { beforeRemove = old }
}
