package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// RESTClient calls a JobManager's REST API, as the weir command line does.
type RESTClient struct {
	base  string
	token string
	http  *http.Client
	// leader, when set, finds the REST URL of the elected JobManager for
	// each request (high availability); base is then only a fallback.
	leader func(ctx context.Context) (string, error)
	closer func()
}

// FollowLeader makes c send every request to the JobManager that leads
// at the time, as leader tells (a highly available cluster), so that a
// client outlives a change of leader.
// Close releases closer as well.
func (c *RESTClient) FollowLeader(leader func(ctx context.Context) (string, error), closer func()) {
	c.leader, c.closer = leader, closer
}

// FollowsLeader reports whether c finds the leader for each request.
func (c *RESTClient) FollowsLeader() bool { return c.leader != nil }

// NewRESTClient returns a client of the REST API at address (host:port, or
// a URL). With TLS enabled in sec it speaks HTTPS and verifies the server
// against sec's CA; with mutual TLS it presents sec's certificate.
func NewRESTClient(address string, sec Security) (*RESTClient, error) {
	if err := sec.TLS.check(); err != nil {
		return nil, err
	}
	c := &RESTClient{token: sec.Token, http: &http.Client{}}
	scheme := "http"
	if sec.TLS.Enabled {
		scheme = "https"
		cfg, err := sec.TLS.clientConfig()
		if err != nil {
			return nil, err
		}
		c.http.Transport = &http.Transport{TLSClientConfig: cfg}
	}
	if strings.Contains(address, "://") {
		c.base = strings.TrimSuffix(address, "/")
	} else {
		c.base = scheme + "://" + address
	}
	return c, nil
}

// Overview fetches GET /overview.
func (c *RESTClient) Overview(ctx context.Context) (Overview, error) {
	var o Overview
	return o, c.get(ctx, "/overview", &o)
}

// Jobs fetches GET /jobs.
func (c *RESTClient) Jobs(ctx context.Context) ([]JobIDStatus, error) {
	var j JobsJSON
	return j.Jobs, c.get(ctx, "/jobs", &j)
}

// TaskManagers fetches GET /taskmanagers.
func (c *RESTClient) TaskManagers(ctx context.Context) ([]TaskManagerJSON, error) {
	var t TaskManagersJSON
	return t.TaskManagers, c.get(ctx, "/taskmanagers", &t)
}

// JobManagerConfig returns the JobManager's settings that clients act
// on (GET /jobmanager/config) by key.
func (c *RESTClient) JobManagerConfig(ctx context.Context) (map[string]string, error) {
	var entries []ConfigEntryJSON
	if err := c.get(ctx, "/jobmanager/config", &entries); err != nil {
		return nil, err
	}
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		m[e.Key] = e.Value
	}
	return m, nil
}

// Close releases idle connections.
func (c *RESTClient) Close() {
	c.http.CloseIdleConnections()
	if c.closer != nil {
		c.closer()
	}
}

// UploadArtifact uploads an executable (POST /artifacts) whose SHA-256
// is sum; the JobManager refuses content with another hash.
func (c *RESTClient) UploadArtifact(ctx context.Context, r io.Reader, sum string) error {
	var a ArtifactJSON
	return c.do(ctx, http.MethodPost, "/artifacts?sha256="+url.QueryEscape(sum), r, "application/octet-stream", &a)
}

// SubmitJob submits a job (POST /jobs) and returns its ID.
func (c *RESTClient) SubmitJob(ctx context.Context, sub JobSubmission) (string, error) {
	var out JobSubmitted
	return out.JobID, c.doJSON(ctx, http.MethodPost, "/jobs", sub, &out)
}

// Job fetches GET /jobs/{id}.
func (c *RESTClient) Job(ctx context.Context, id string) (JobDetails, error) {
	var d JobDetails
	return d, c.get(ctx, "/jobs/"+url.PathEscape(id), &d)
}

// CancelJob asks the JobManager to cancel a job (PATCH
// /jobs/{id}?mode=cancel).
func (c *RESTClient) CancelJob(ctx context.Context, id string) error {
	var out struct{}
	return c.do(ctx, http.MethodPatch, "/jobs/"+url.PathEscape(id)+"?mode=cancel", nil, "", &out)
}

// TriggerSavepoint starts a savepoint (POST /jobs/{id}/savepoints) and
// returns the trigger ID to poll with SavepointStatus.
func (c *RESTClient) TriggerSavepoint(ctx context.Context, id, dir string) (string, error) {
	var out TriggerJSON
	return out.RequestID, c.doJSON(ctx, http.MethodPost, "/jobs/"+url.PathEscape(id)+"/savepoints", SavepointRequest{TargetDirectory: dir}, &out)
}

// StopJob starts a stop-with-savepoint (POST /jobs/{id}/stop) and returns
// the trigger ID to poll with SavepointStatus.
func (c *RESTClient) StopJob(ctx context.Context, id, dir string, drain bool) (string, error) {
	var out TriggerJSON
	return out.RequestID, c.doJSON(ctx, http.MethodPost, "/jobs/"+url.PathEscape(id)+"/stop", StopRequest{TargetDirectory: dir, Drain: drain}, &out)
}

// SavepointStatus fetches GET /jobs/{id}/savepoints/{triggerid}.
func (c *RESTClient) SavepointStatus(ctx context.Context, id, trigger string) (SavepointStatusJSON, error) {
	var out SavepointStatusJSON
	return out, c.get(ctx, "/jobs/"+url.PathEscape(id)+"/savepoints/"+url.PathEscape(trigger), &out)
}

func (c *RESTClient) get(ctx context.Context, path string, v any) error {
	return c.do(ctx, http.MethodGet, path, nil, "", v)
}

func (c *RESTClient) doJSON(ctx context.Context, method, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return c.do(ctx, method, path, bytes.NewReader(body), "application/json", out)
}

func (c *RESTClient) do(ctx context.Context, method, path string, body io.Reader, contentType string, v any) error {
	base := c.base
	if c.leader != nil {
		b, err := c.leader(ctx)
		if err != nil {
			return fmt.Errorf("jobmanager REST API: finding the leader: %w", err)
		}
		base = strings.TrimSuffix(b, "/")
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return err
	}
	// A file's length, announced, lets a JobManager refuse one over
	// rest.server.max-content-length before the client sends any of it.
	if f, ok := body.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			req.ContentLength = fi.Size()
		}
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("jobmanager REST API at %s: %w", base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("jobmanager REST API at %s: %w", base, err)
	}
	if resp.StatusCode/100 != 2 {
		var e ErrorJSON
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &e) == nil && len(e.Errors) > 0 {
			msg = strings.Join(e.Errors, "; ")
		}
		p, _, _ := strings.Cut(path, "?")
		return &RESTError{Code: resp.StatusCode, Msg: fmt.Sprintf("jobmanager REST API at %s: %s %s: %s: %s", base, method, p, resp.Status, msg)}
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("jobmanager REST API at %s: %s %s: %w", base, method, path, err)
	}
	return nil
}

// RESTError is an error answer of the REST API.
type RESTError struct {
	Code int // HTTP status
	Msg  string
}

func (e *RESTError) Error() string { return e.Msg }

// BackPressure fetches GET /jobs/{id}/vertices/{vid}/backpressure.
func (c *RESTClient) BackPressure(ctx context.Context, id, vid string) (BackPressureJSON, error) {
	var out BackPressureJSON
	return out, c.get(ctx, "/jobs/"+url.PathEscape(id)+"/vertices/"+url.PathEscape(vid)+"/backpressure", &out)
}

// Checkpointing fetches GET /jobs/{id}/checkpoints.
func (c *RESTClient) Checkpointing(ctx context.Context, id string) (CheckpointingStatisticsJSON, error) {
	var out CheckpointingStatisticsJSON
	return out, c.get(ctx, "/jobs/"+url.PathEscape(id)+"/checkpoints", &out)
}
