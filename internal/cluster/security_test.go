package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirproject/weir/internal/cluster/rpcpb"
)

func TestWithoutSecurityOptions(t *testing.T) {
	sub := JobSubmission{
		Options: []string{"parallelism.default=2", "security.token=s3cret", "security.ssl.mutual=true"},
		Args: []string{"--input", "x", "-D", "security.token=s3cret", "-D", "a.b=1", "--D=security.token=s3cret",
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
	if !slices.Equal(sub.Options, []string{"parallelism.default=2", "security.token=s3cret", "security.ssl.mutual=true"}) {
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
