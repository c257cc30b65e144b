//go:build unix

package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// oNoFollow makes an open fail on a symbolic link rather than open what
// it points to.
const oNoFollow = syscall.O_NOFOLLOW

// makeStandaloneDir creates dir with mode 0700 (and its missing parents
// too) unless it exists, then checks it as checkStandaloneDir does.
func makeStandaloneDir(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("cluster directory: %w", err)
	}
	return checkStandaloneDir(dir)
}

// checkStandaloneDir returns dir with its symbolic links resolved after
// checking that no other user can change what is in it: weir cluster
// start writes pid and log files there and weir cluster stop signals the
// pids it reads there, so a directory another user can write would let
// that user plant a link that makes us truncate or append to any file we
// can write, or stop processes of ours. The directory must belong to us
// and not be writable by group or others; each of its parents must belong
// to us or root and, if group or others may write it, have the sticky bit
// (like /tmp), so that nobody can rename the directory and put another in
// its place. The files are then opened under the resolved path, where no
// link can be swapped after the check.
func checkStandaloneDir(dir string) (string, error) {
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("cluster directory: %w", err)
	}
	if resolved, err = filepath.Abs(resolved); err != nil {
		return "", fmt.Errorf("cluster directory %s: %w", dir, err)
	}
	uid := os.Geteuid()
	shown := dir
	if resolved != filepath.Clean(dir) {
		shown = fmt.Sprintf("%s (%s)", dir, resolved)
	}
	fi, owner, err := lstatOwner(resolved)
	if err != nil {
		return "", fmt.Errorf("cluster directory: %w", err)
	}
	switch {
	case !fi.IsDir():
		return "", fmt.Errorf("cluster directory %s is not a directory (mode %s); choose a directory with --dir", shown, fi.Mode())
	case owner != uid:
		return "", fmt.Errorf("cluster directory %s belongs to uid %d (mode %04o), not to uid %d who runs weir: "+
			"its owner could plant links there that make the cluster write to files of yours; "+
			"remove it if it is yours to remove, or choose a directory of your own with --dir", shown, owner, fi.Mode().Perm(), uid)
	case fi.Mode().Perm()&0o022 != 0:
		return "", fmt.Errorf("cluster directory %s is writable by group or others (mode %04o): "+
			"another user could plant links there that make the cluster write to files of yours; "+
			"run chmod go-w %s, or choose another directory with --dir", shown, fi.Mode().Perm(), resolved)
	}
	for p := filepath.Dir(resolved); ; p = filepath.Dir(p) {
		pfi, powner, err := lstatOwner(p)
		if err != nil {
			return "", fmt.Errorf("cluster directory %s: %w", shown, err)
		}
		switch {
		case powner != uid && powner != 0:
			return "", fmt.Errorf("cluster directory %s is inside %s, which belongs to uid %d (mode %04o): "+
				"that user could put another directory in its place; choose a directory under one of your own with --dir",
				shown, p, powner, pfi.Mode().Perm())
		case pfi.Mode().Perm()&0o022 != 0 && pfi.Mode()&fs.ModeSticky == 0:
			return "", fmt.Errorf("cluster directory %s is inside %s, which is writable by group or others without the sticky bit (mode %04o): "+
				"another user could put another directory in its place; choose a directory under one of your own with --dir",
				shown, p, pfi.Mode().Perm())
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	return resolved, nil
}

func lstatOwner(path string) (fs.FileInfo, int, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, 0, errors.New(path + ": no owner in its file information")
	}
	return fi, int(st.Uid), nil
}
