//go:build linux

package server

import (
	"math"
	"syscall"
)

// FileLimit is the process's open-files limit (RLIMIT_NOFILE's soft limit).
func FileLimit() (uint64, bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, false
	}
	return clampLimit(lim.Cur), true
}

// RaiseFileLimit raises the open-files soft limit to the hard limit and returns the soft limit
// in force. Go's runtime raises it too at start-up (since Go 1.19); Herald does it itself so that
// the figure its connection cap is derived from does not rest on that.
func RaiseFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
			return clampLimit(lim.Cur), err
		}
		lim = raised
	}
	return clampLimit(lim.Cur), nil
}

// clampLimit turns RLIM_INFINITY into a number the cap's arithmetic can use.
func clampLimit(v uint64) uint64 { return min(v, math.MaxInt32) }
