package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// StandaloneOptions describe a local standalone cluster: one JobManager and
// some TaskManagers started as background processes of the weir binary, the
// Go counterpart of Flink's start-cluster.sh.
type StandaloneOptions struct {
	Exe          string   // the weir binary
	Dir          string   // pid and log files
	TaskManagers int      // at least 1
	Slots        int      // per TaskManager
	Args         []string // passed to every process (--config, -D)
	Env          []string // added to the environment of every process
	RESTAddress  string   // where to poll the JobManager's REST API
	Security     Security // for polling it
	Wait         time.Duration
}

// StartStandalone starts the processes, writes their pid files into
// opts.Dir, and waits until every TaskManager has registered. The
// processes outlive the caller; StopStandalone stops them.
func StartStandalone(ctx context.Context, opts StandaloneOptions) error {
	if opts.TaskManagers < 1 || opts.Slots < 1 {
		return fmt.Errorf("cluster start: need at least 1 taskmanager with at least 1 slot, got %d with %d", opts.TaskManagers, opts.Slots)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return err
	}
	if running := runningProcesses(opts.Dir); len(running) > 0 {
		return fmt.Errorf("a cluster started from %s is still running (%s); stop it first with weir cluster stop", opts.Dir, strings.Join(running, ", "))
	}
	exited := make(chan error, opts.TaskManagers+1)
	start := func(name string, args ...string) error {
		logPath := filepath.Join(opts.Dir, name+".log")
		logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer logFile.Close() // the child has its own descriptor
		cmd := exec.Command(opts.Exe, append(args, opts.Args...)...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.Env = append(os.Environ(), opts.Env...)
		if err := detach(cmd); err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(opts.Dir, name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
			cmd.Process.Kill()
			return err
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
			StopStandalone(opts.Dir, 5*time.Second)
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
			StopStandalone(opts.Dir, 5*time.Second)
			return err
		case <-ctx.Done():
			StopStandalone(opts.Dir, 5*time.Second)
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
// is removed without signalling anything.
func StopStandalone(dir string, grace time.Duration) ([]string, error) {
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

func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
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
