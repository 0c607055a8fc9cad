//go:build !linux

package server

// FileLimit reports no open-files limit where Herald does not read it (DefaultMaxConns then uses
// its fallback).
func FileLimit() (uint64, bool) { return 0, false }

// RaiseFileLimit does nothing where Herald does not manage the open-files limit.
func RaiseFileLimit() (uint64, error) { return 0, nil }
