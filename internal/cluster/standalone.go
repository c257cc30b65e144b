package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StandaloneOptions describe a local standalone cluster: one JobManager and
// some TaskManagers started as background processes of the weir binary, the
// Go counterpart of Flink's start-cluster.sh.
type StandaloneOptions struct {
	Exe          string   // the weir binary
	Dir          string   // pid and log files; see DefaultStandaloneDir and makeStandaloneDir
	TaskManagers int      // at least 1
	Slots        int      // per TaskManager
	Args         []string // passed to every process (--config, -D)
	Env          []string // added to the environment of every process
	RESTAddress  string   // where to poll the JobManager's REST API
	Security     Security // for polling it
	Wait         time.Duration
}

// DefaultStandaloneDir is where weir cluster start and stop keep their pid
// and log files unless told otherwise: $XDG_RUNTIME_DIR/weir/cluster when
// XDG_RUNTIME_DIR names a directory of the user's that nobody else can
// write (it goes away at logout, as the processes' pids lose their meaning
// at reboot), else $XDG_STATE_HOME/weir/cluster, else
// ~/.local/state/weir/cluster. Never a predictable name in the shared
// temporary directory, where another user could create it first.
func DefaultStandaloneDir() (string, error) {
	if run := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(run) {
		if _, err := checkStandaloneDir(run); err == nil {
			return filepath.Join(run, "weir", "cluster"), nil
		}
	}
	if state := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(state) {
		return filepath.Join(state, "weir", "cluster"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no directory for the cluster's pid and log files: neither XDG_RUNTIME_DIR, XDG_STATE_HOME nor a home directory is usable (%v); set --dir", err)
	}
	return filepath.Join(home, ".local", "state", "weir", "cluster"), nil
}

// StartStandalone starts the processes, writes their pid files into
// opts.Dir, and waits until every TaskManager has registered. The
// processes outlive the caller; StopStandalone stops them. It creates
// opts.Dir with mode 0700 and refuses one that another user could write
// (makeStandaloneDir says why), and it opens its files there without
// following symbolic links.
func StartStandalone(ctx context.Context, opts StandaloneOptions) error {
	if opts.TaskManagers < 1 || opts.Slots < 1 {
		return fmt.Errorf("cluster start: need at least 1 taskmanager with at least 1 slot, got %d with %d", opts.TaskManagers, opts.Slots)
	}
	// The processes would refuse the token too, each in its log; refusing
	// it here says so on the terminal and starts nothing.
	if err := CheckToken(opts.Security.Token); err != nil {
		return err
	}
	dir, err := makeStandaloneDir(opts.Dir)
	if err != nil {
		return err
	}
	if running := runningProcesses(dir); len(running) > 0 {
		return fmt.Errorf("a cluster started from %s is still running (%s); stop it first with weir cluster stop", opts.Dir, strings.Join(running, ", "))
	}
	// None of the pid files left in dir names a running process: they are
	// stale, from a cluster that was killed or a machine that rebooted.
	// Removing them lets each new one be created exclusively.
	if err := removePIDFiles(dir); err != nil {
		return err
	}
	exited := make(chan error, opts.TaskManagers+1)
	start := func(name string, args ...string) error {
		logPath := filepath.Join(dir, name+".log")
		logFile, err := openLog(logPath)
		if err != nil {
			return err
		}
		defer logFile.Close() // the child has its own descriptor
		pidFile, err := createPIDFile(filepath.Join(dir, name+".pid"))
		if err != nil {
			return err
		}
		defer pidFile.Close()
		cmd := exec.Command(opts.Exe, append(args, opts.Args...)...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.Env = append(os.Environ(), opts.Env...)
		if err := detach(cmd); err != nil {
			os.Remove(pidFile.Name()) // empty: no process to name
			return err
		}
		if err := cmd.Start(); err != nil {
			os.Remove(pidFile.Name())
			return fmt.Errorf("start %s: %w", name, err)
		}
		if _, err := pidFile.WriteString(strconv.Itoa(cmd.Process.Pid) + "\n"); err != nil {
			cmd.Process.Kill()
			return fmt.Errorf("pid file of %s: %w", name, err)
		}
		// Waiting reaps a process that exits while we watch it start; once
		// we return, the processes are on their own.
		go func() {
			err := cmd.Wait()
			exited <- fmt.Errorf("%s exited (%v); its log %s ends:\n%s", name, err, logPath, tail(logPath, 20))
		}()
		return nil
	}
	if err := start("jobmanager", "jobmanager"); err != nil {
		return err
	}
	for i := 1; i <= opts.TaskManagers; i++ {
		if err := start(fmt.Sprintf("taskmanager-%d", i), "taskmanager", "--slots", strconv.Itoa(opts.Slots)); err != nil {
			StopStandalone(dir, 5*time.Second)
			return err
		}
	}

	client, err := NewRESTClient(opts.RESTAddress, opts.Security)
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, opts.Wait)
	defer cancel()
	var last error
	for {
		octx, ocancel := context.WithTimeout(ctx, time.Second)
		o, err := client.Overview(octx)
		ocancel()
		if err == nil && o.TaskManagers >= opts.TaskManagers {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("%d of %d taskmanagers registered", o.TaskManagers, opts.TaskManagers)
		}
		last = err
		select {
		case err := <-exited:
			StopStandalone(dir, 5*time.Second)
			return err
		case <-ctx.Done():
			StopStandalone(dir, 5*time.Second)
			return fmt.Errorf("the cluster did not come up within %v: %v (logs in %s)", opts.Wait, last, opts.Dir)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// StopStandalone stops the processes whose pid files are in dir: the
// TaskManagers first, so that they unregister, then the JobManager. Each
// gets SIGTERM and, if still alive after grace, SIGKILL. It returns the
// names of the processes it stopped. A pid file whose process is gone, or
// whose pid now belongs to a process that is not a weir cluster process,
// is removed without signalling anything. A directory that another user
// could write is refused as StartStandalone refuses it: its pid files
// could name any process of ours.
func StopStandalone(dir string, grace time.Duration) ([]string, error) {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	dir, err := checkStandaloneDir(dir)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.pid"))
	if err != nil {
		return nil, err
	}
	// "jobmanager" sorts before "taskmanager-N": reverse to stop it last.
	slices.Sort(files)
	slices.Reverse(files)
	var stopped []string
	var errs []error
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".pid")
		pid, err := readPID(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if isClusterProcess(pid) {
			if err := terminate(pid, grace); err != nil {
				errs = append(errs, fmt.Errorf("stop %s (pid %d): %w", name, pid, err))
				continue
			}
			stopped = append(stopped, name)
		}
		if err := os.Remove(f); err != nil {
			errs = append(errs, err)
		}
	}
	return stopped, errors.Join(errs...)
}

// runningProcesses lists the pid files in dir whose processes still run.
func runningProcesses(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
	var running []string
	for _, f := range files {
		if pid, err := readPID(f); err == nil && isClusterProcess(pid) {
			running = append(running, fmt.Sprintf("%s pid %d", strings.TrimSuffix(filepath.Base(f), ".pid"), pid))
		}
	}
	return running
}

// openLog opens the log file at path for appending, creating it if need
// be, and refuses a symbolic link or anything but a regular file there.
func openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|oNoFollow, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("log file %s is a symbolic link; weir cluster start writes only to files of its own: remove the link", path)
	}
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("not a regular file (mode %s)", fi.Mode())
		}
		return nil, fmt.Errorf("log file %s: %w; remove it", path, err)
	}
	return f, nil
}

// createPIDFile creates the pid file at path exclusively: whatever is
// there, a link included, is not ours to overwrite.
func createPIDFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|oNoFollow, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pid file: %w", err)
	}
	return f, nil
}

// removePIDFiles removes the pid files in dir (links are removed, not
// followed).
func removePIDFiles(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.pid"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("stale pid file: %w", err)
		}
	}
	return nil
}

// readPID reads a pid file, refusing a symbolic link: a pid file is
// something weir wrote, never a pointer elsewhere.
func readPID(path string) (int, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if errors.Is(err, syscall.ELOOP) {
		return 0, fmt.Errorf("%s is a symbolic link, not a pid file", path)
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 32))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("%s: not a pid file", path)
	}
	return pid, nil
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
