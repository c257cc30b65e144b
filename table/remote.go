package table

import (
	"context"
	"fmt"
	"maps"

	"github.com/weirproject/weir/stream"
)

// JobSubmission is an INSERT INTO (or EXECUTE STATEMENT SET) planned by an
// Environment whose jobs go to a remote cluster (WithJobSubmitter): the
// stream environment that holds the job, the job's name, the statement's
// text and the session's settings.
type JobSubmission struct {
	Env       *stream.Environment
	JobName   string
	Statement string
	Settings  map[string]string
}

// JobSubmitter sends a planned job to a cluster and returns its ID there.
type JobSubmitter func(ctx context.Context, sub JobSubmission) (jobID string, err error)

// WithJobSubmitter sends the session's INSERT INTO jobs to submit instead of
// running them in this process; the Result of an INSERT then carries the
// cluster's JobID and no Job. Queries (SELECT) are refused: their rows
// would have to come back to this process.
func WithJobSubmitter(submit JobSubmitter) Option {
	return func(e *Environment) { e.submit = submit }
}

// submitRemote hands a planned INSERT to the session's submitter.
func (e *Environment) submitRemote(ctx context.Context, env *stream.Environment, text string) (*Result, error) {
	e.mu.Lock()
	settings := maps.Clone(e.settings)
	e.mu.Unlock()
	id, err := e.submit(ctx, JobSubmission{Env: env, JobName: e.jobName(text), Statement: text, Settings: settings})
	if err != nil {
		return nil, err
	}
	return &Result{Kind: ResultJob, JobID: id}, nil
}

// errRemoteQuery refuses a query in a session whose jobs go to a cluster.
func errRemoteQuery(line, col int) error {
	return fmt.Errorf("line %d, column %d: queries (SELECT) cannot run on a remote cluster (--jobmanager) yet: their results are not collected back to the client; "+
		"INSERT INTO a sink table instead, or run the query without --jobmanager", line, col)
}
