//go:build unix

package blob

import "syscall"

// statfsFree is the space free to an unprivileged process on the file system holding dir.
func statfsFree(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	// Bavail and Bsize have different types on different systems.
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
