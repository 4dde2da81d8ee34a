//go:build !linux

package main

// protectProcess has nothing to do where there is no /proc/<pid>/environ to protect.
func protectProcess() error { return nil }
