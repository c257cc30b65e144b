package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirproject/weir/internal/cluster/rpcpb"
)

func TestWithoutSecurityOptions(t *testing.T) {
	sub := JobSubmission{
		Options: []string{"parallelism.default=2", "security.token=s3cret-0123456789abcdef", "security.ssl.mutual=true"},
		Args: []string{"--input", "x", "-D", "security.token=s3cret-0123456789abcdef", "-D", "a.b=1", "--D=security.token=s3cret-0123456789abcdef",
			"-D=c.d=2", "--", "-D", "security.token=kept-after-dashdash"},
	}
	got, dropped := withoutSecurityOptions(sub)
	if want := []string{"parallelism.default=2"}; !slices.Equal(got.Options, want) {
		t.Errorf("Options = %q, want %q", got.Options, want)
	}
	if want := []string{"--input", "x", "-D", "a.b=1", "-D=c.d=2", "--", "-D", "security.token=kept-after-dashdash"}; !slices.Equal(got.Args, want) {
		t.Errorf("Args = %q, want %q", got.Args, want)
	}
	if want := []string{"security.token", "security.ssl.mutual", "security.token", "security.token"}; !slices.Equal(dropped, want) {
		t.Errorf("dropped = %q, want %q", dropped, want)
	}
	if !slices.Equal(sub.Options, []string{"parallelism.default=2", "security.token=s3cret-0123456789abcdef", "security.ssl.mutual=true"}) {
		t.Errorf("the caller's submission changed: %q", sub.Options)
	}
	clean := JobSubmission{Options: []string{"a=1"}, Args: []string{"-D", "b=2"}}
	if got, dropped := withoutSecurityOptions(clean); dropped != nil || !slices.Equal(got.Args, clean.Args) || !slices.Equal(got.Options, clean.Options) {
		t.Errorf("a submission without security options changed: %+v, %q", got, dropped)
	}
}

// TestTaskManagerRefusesPathsAsJobIDs: a job ID names the attempt's
// directory, so one that could leave the working directory is refused.
func TestTaskManagerRefusesPathsAsJobIDs(t *testing.T) {
	jm := startJM(t, nil)
	tm, _ := runTM(t, jm.RPCAddr(), 1, nil)
	waitTotals(t, jm, [3]int{1, 1, 1})
	tm.mu.Lock()
	regID := tm.regID
	tm.mu.Unlock()
	for _, id := range []string{"../../escape", "a/b", "..", ".hidden"} {
		_, err := (&tmService{tm: tm}).SubmitJob(context.Background(), &rpcpb.SubmitJobRequest{
			RegistrationId: regID, JobId: id, Attempt: 1, ArtifactSha256: strings.Repeat("0", 64)})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("job ID %q: err = %v, want InvalidArgument", id, err)
		}
	}
}

// testToken is a token that servers accept.
const testToken = "test-token-0123456789abcdef"

func TestCheckToken(t *testing.T) {
	for _, tc := range []struct {
		token, want string // want "" for a token that passes
	}{
		{"", ""},
		{"0123456789abcdef", ""},
		{"correct horse battery staple", ""},
		{"s3cret", "security.token: 6 characters; a token needs at least 16 non-space characters"},
		{"a b c d e f g h i j k l m n o", "security.token: 15 non-space characters; a token needs at least 16"},
		{" ", "security.token: 1 characters, all white space"},
		{strings.Repeat(" ", 32), "security.token: 32 characters, all white space"},
		{"\t\n", "all white space"},
		{"0123456789abcdef\n", "white space at its start or end"},
		{" 0123456789abcdef", "white space at its start or end"},
		{"0123456789abcdéf0", "not printable ASCII"},
		{"0123456789\x00abcdef", "not printable ASCII"},
	} {
		err := CheckToken(tc.token)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckToken(%q) = %v, want nil", tc.token, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckToken(%q) = %v, want an error with %q", tc.token, err, tc.want)
		case err != nil && strings.TrimSpace(tc.token) != "" && strings.Contains(err.Error(), strings.TrimSpace(tc.token)):
			t.Errorf("CheckToken(%q) = %v: the error shows the token", tc.token, err)
		}
	}
}

// TestServersRefuseWeakTokens: a JobManager, a TaskManager and a
// standalone cluster refuse to start with a token that is short or only
// white space, on loopback too. Before, a token of spaces counted as set
// and allowed a bind beyond loopback with which no client could connect.
func TestServersRefuseWeakTokens(t *testing.T) {
	for _, token := range []string{"s3cret", "    ", "0123456789abcdef "} {
		jm, err := StartJobManager(JobManagerOptions{
			BindHost: "127.0.0.1", HeartbeatInterval: time.Second, HeartbeatTimeout: time.Second, RPCTimeout: time.Second,
			Security: Security{Token: token},
		})
		if err == nil {
			jm.Close()
		}
		if err == nil || !strings.HasPrefix(err.Error(), "security.token: ") {
			t.Errorf("jobmanager with token %q: err = %v, want a refusal naming security.token", token, err)
		}
		_, err = NewTaskManager(TaskManagerOptions{
			JobManagerAddress: "127.0.0.1:1", Slots: 1, BindHost: "127.0.0.1",
			RegistrationTimeout: time.Second, RPCTimeout: time.Second, Security: Security{Token: token},
		})
		if err == nil || !strings.HasPrefix(err.Error(), "security.token: ") {
			t.Errorf("taskmanager with token %q: err = %v, want a refusal naming security.token", token, err)
		}
		dir := filepath.Join(t.TempDir(), "cluster")
		err = StartStandalone(context.Background(), StandaloneOptions{
			Exe: filepath.Join(t.TempDir(), "no-weir"), Dir: dir, TaskManagers: 1, Slots: 1,
			RESTAddress: "127.0.0.1:1", Security: Security{Token: token}, Wait: time.Second,
		})
		if err == nil || !strings.HasPrefix(err.Error(), "security.token: ") {
			t.Errorf("cluster start with token %q: err = %v, want a refusal naming security.token", token, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cluster start with token %q made its directory (%v)", token, err)
		}
	}
}
