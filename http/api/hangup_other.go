//go:build !linux

package api

import "sync"

var hangups = sync.OnceValue(func() hangupWatcher { return readerWatcher{} })
