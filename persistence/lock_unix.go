//go:build !windows

package persistence

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockFile takes the lock bbolt takes on a database file (flock: shared to read, exclusive to
// write), waiting at most timeout; ErrLocked when another process holds it. Closing f releases it.
func lockFile(f *os.File, exclusive bool, timeout time.Duration) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return fmt.Errorf("persistence: lock %s: %w", f.Name(), err)
		case time.Now().After(deadline):
			return ErrLocked
		}
		time.Sleep(50 * time.Millisecond)
	}
}
