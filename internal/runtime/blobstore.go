package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/gcerrors"

	// s3blob registers the s3:// scheme with blob.OpenBucket.
	_ "gocloud.dev/blob/s3blob"
)

// location is a directory in blob storage: a bucket and a key prefix.
// Checkpoint storage goes through one blob library (gocloud.dev/blob) so
// that a path, file:// and s3:// are the same code; a plain path is a
// key prefix in one bucket rooted at "/".
type location struct {
	bucket *blob.Bucket
	// prefix is the directory's key, without a trailing slash.
	prefix string
	// scheme and base render the location for users: a plain path for
	// files, the URI otherwise.
	scheme string
	base   string // "s3://bucket" plus query, for non-file schemes
}

var buckets struct {
	sync.Mutex
	open map[string]*blob.Bucket
}

// bucketFor opens a bucket once per process: opening an S3 bucket builds
// a client with its connection pool, which every checkpoint of every job
// shares.
func bucketFor(ctx context.Context, key string, open func() (*blob.Bucket, error)) (*blob.Bucket, error) {
	buckets.Lock()
	defer buckets.Unlock()
	if b, ok := buckets.open[key]; ok {
		return b, nil
	}
	b, err := open()
	if err != nil {
		return nil, err
	}
	if buckets.open == nil {
		buckets.open = make(map[string]*blob.Bucket)
	}
	buckets.open[key] = b
	return b, nil
}

// closeBuckets closes every opened bucket; tests call it so that idle
// HTTP connections do not look like leaked goroutines.
func closeBuckets() {
	buckets.Lock()
	defer buckets.Unlock()
	for k, b := range buckets.open {
		_ = b.Close()
		delete(buckets.open, k)
	}
}

// openLocation parses a directory given as a path or a URI: file:///dir
// or s3://bucket/dir?region=...&endpoint=...&use_path_style=true.
func openLocation(ctx context.Context, pathOrURI string) (*location, error) {
	if !strings.Contains(pathOrURI, "://") {
		return fileLocation(pathOrURI)
	}
	u, err := url.Parse(pathOrURI)
	if err != nil {
		return nil, fmt.Errorf("%q is not a valid URI: %w", pathOrURI, err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("%q: a file:// URI names a local path (file:///dir), not host %q", pathOrURI, u.Host)
		}
		return fileLocation(u.Path)
	case "s3":
		if u.Host == "" {
			return nil, fmt.Errorf("%q: an s3:// URI needs a bucket (s3://bucket/dir)", pathOrURI)
		}
		base := "s3://" + u.Host
		if u.RawQuery != "" {
			base += "?" + u.RawQuery
		}
		b, err := bucketFor(ctx, base, func() (*blob.Bucket, error) { return blob.OpenBucket(ctx, base) })
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", base, err)
		}
		return &location{bucket: b, prefix: strings.Trim(u.Path, "/"), scheme: "s3", base: base}, nil
	default:
		return nil, fmt.Errorf("%q: scheme %q is not supported; use a path, file:// or s3://", pathOrURI, u.Scheme)
	}
}

func fileLocation(p string) (*location, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", p, err)
	}
	b, err := bucketFor(context.Background(), "file", func() (*blob.Bucket, error) {
		// Temporary files next to their target, so that the final
		// rename never crosses file systems; no attribute side files.
		return fileblob.OpenBucket("/", &fileblob.Options{NoTempDir: true, Metadata: fileblob.MetadataDontWrite})
	})
	if err != nil {
		return nil, fmt.Errorf("open file storage: %w", err)
	}
	return &location{bucket: b, prefix: strings.TrimPrefix(filepath.ToSlash(abs), "/"), scheme: "file"}, nil
}

// String is the location as a user would write it.
func (l *location) String() string {
	if l.scheme == "file" {
		return "/" + l.prefix
	}
	base, query, _ := strings.Cut(l.base, "?")
	s := base + "/" + l.prefix
	if query != "" {
		s += "?" + query
	}
	return s
}

// join returns the location of a subdirectory.
func (l *location) join(elem ...string) *location {
	c := *l
	c.prefix = path.Join(append([]string{l.prefix}, elem...)...)
	return &c
}

// parent returns the enclosing directory.
func (l *location) parent() *location {
	c := *l
	c.prefix = path.Dir(l.prefix)
	if c.prefix == "." {
		c.prefix = ""
	}
	return &c
}

func (l *location) key(name string) string {
	if l.prefix == "" {
		return name
	}
	return l.prefix + "/" + name
}

// write stores data under name; readers see all of it or nothing.
func (l *location) write(ctx context.Context, name string, data []byte) error {
	if err := l.bucket.WriteAll(ctx, l.key(name), data, nil); err != nil {
		return fmt.Errorf("write %s/%s: %w", l, name, err)
	}
	return nil
}

func (l *location) read(ctx context.Context, name string) ([]byte, error) {
	data, err := l.bucket.ReadAll(ctx, l.key(name))
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil, fmt.Errorf("read %s/%s: %w", l, name, os.ErrNotExist)
		}
		return nil, fmt.Errorf("read %s/%s: %w", l, name, err)
	}
	return data, nil
}

// create stores data under name only if nothing is stored there yet, and
// reports whether it did. On files the test and the creation are one
// step (O_EXCL), so that of two processes racing for the name exactly one
// wins; object stores use a conditional write (If-None-Match).
func (l *location) create(ctx context.Context, name string, data []byte) (bool, error) {
	if l.scheme == "file" {
		p := "/" + l.key(name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return false, fmt.Errorf("create %s: %w", p, err)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("create %s: %w", p, err)
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return false, fmt.Errorf("create %s: %w", p, err)
		}
		return true, nil
	}
	err := l.bucket.WriteAll(ctx, l.key(name), data, &blob.WriterOptions{IfNotExist: true})
	if gcerrors.Code(err) == gcerrors.FailedPrecondition {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("create %s/%s: %w", l, name, err)
	}
	return true, nil
}

// upload copies a local file into the location.
func (l *location) upload(ctx context.Context, name, localPath string) (int64, error) {
	f, err := os.Open(localPath)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w, err := l.bucket.NewWriter(ctx, l.key(name), nil)
	if err != nil {
		return 0, fmt.Errorf("upload %s to %s/%s: %w", localPath, l, name, err)
	}
	n, err := io.Copy(w, f)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("upload %s to %s/%s: %w", localPath, l, name, err)
	}
	return n, nil
}

// download copies an object into a new local file.
func (l *location) download(ctx context.Context, name, localPath string) error {
	r, err := l.bucket.NewReader(ctx, l.key(name), nil)
	if err != nil {
		return fmt.Errorf("download %s/%s: %w", l, name, err)
	}
	defer r.Close()
	f, err := os.Create(localPath)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return fmt.Errorf("download %s/%s: %w", l, name, err)
	}
	return f.Close()
}

func (l *location) delete(ctx context.Context, name string) error {
	err := l.bucket.Delete(ctx, l.key(name))
	if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("delete %s/%s: %w", l, name, err)
	}
	return nil
}

// deleteAll removes everything under the location.
func (l *location) deleteAll(ctx context.Context) error {
	it := l.bucket.List(&blob.ListOptions{Prefix: l.prefix + "/"})
	var errs []error
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs = append(errs, err)
			break
		}
		if err := l.bucket.Delete(ctx, obj.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			errs = append(errs, err)
		}
	}
	if l.scheme == "file" {
		// Object stores have no directories; a file system keeps the
		// empty ones the deletes leave behind.
		_ = os.RemoveAll("/" + l.prefix)
	}
	if len(errs) > 0 {
		return fmt.Errorf("delete %s: %w", l, errors.Join(errs...))
	}
	return nil
}
