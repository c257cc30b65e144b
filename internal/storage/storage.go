// Package storage is the one way weir reaches durable files: checkpoints,
// savepoints and the file connector all open a Location, given as a path,
// a file:// URI or an s3:// URI, and read and write objects under it through
// gocloud.dev/blob. Object stores have no rename and no append, so the
// operations here are the ones both kinds of storage do well: whole-object
// writes, conditional creation, ranged reads, listing, copy and delete.
package storage

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

// Location is a directory in blob storage: a bucket and a key prefix.
// Checkpoint storage goes through one blob library (gocloud.dev/blob) so
// that a path, file:// and s3:// are the same code; a plain path is a
// key prefix in one bucket rooted at "/".
type Location struct {
	bucket *blob.Bucket
	// prefix is the directory's key, without a trailing slash.
	prefix string
	// scheme and base render the Location for users: a plain path for
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

// CloseBuckets closes every opened bucket; tests call it so that idle
// HTTP connections do not look like leaked goroutines.
func CloseBuckets() {
	buckets.Lock()
	defer buckets.Unlock()
	for k, b := range buckets.open {
		_ = b.Close()
		delete(buckets.open, k)
	}
}

// Open parses a directory given as a path or a URI: file:///dir
// or s3://bucket/dir?region=...&endpoint=...&use_path_style=true.
func Open(ctx context.Context, pathOrURI string) (*Location, error) {
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
		return &Location{bucket: b, prefix: strings.Trim(u.Path, "/"), scheme: "s3", base: base}, nil
	default:
		return nil, fmt.Errorf("%q: scheme %q is not supported; use a path, file:// or s3://", pathOrURI, u.Scheme)
	}
}

func fileLocation(p string) (*Location, error) {
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
	return &Location{bucket: b, prefix: strings.TrimPrefix(filepath.ToSlash(abs), "/"), scheme: "file"}, nil
}

// String is the Location as a user would write it.
func (l *Location) String() string {
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

// Join returns the Location of a subdirectory.
func (l *Location) Join(elem ...string) *Location {
	c := *l
	c.prefix = path.Join(append([]string{l.prefix}, elem...)...)
	return &c
}

// Within reports whether l is dir or lies inside it: the same store
// (scheme, bucket and its options) and a key prefix under dir's. Names
// are compared as written; symbolic links are not followed.
func (l *Location) Within(dir *Location) bool {
	if l.scheme != dir.scheme || l.base != dir.base {
		return false
	}
	return dir.prefix == "" || l.prefix == dir.prefix || strings.HasPrefix(l.prefix, dir.prefix+"/")
}

// Parent returns the enclosing directory.
func (l *Location) Parent() *Location {
	c := *l
	c.prefix = path.Dir(l.prefix)
	if c.prefix == "." {
		c.prefix = ""
	}
	return &c
}

func (l *Location) key(name string) string {
	if l.prefix == "" {
		return name
	}
	return l.prefix + "/" + name
}

// Write stores data under name; readers see all of it or nothing.
func (l *Location) Write(ctx context.Context, name string, data []byte) error {
	if err := l.bucket.WriteAll(ctx, l.key(name), data, nil); err != nil {
		return fmt.Errorf("write %s: %w", l.URI(name), err)
	}
	return nil
}

func (l *Location) Read(ctx context.Context, name string) ([]byte, error) {
	data, err := l.bucket.ReadAll(ctx, l.key(name))
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil, fmt.Errorf("read %s: %w", l.URI(name), os.ErrNotExist)
		}
		return nil, fmt.Errorf("read %s: %w", l.URI(name), err)
	}
	return data, nil
}

// Create stores data under name only if nothing is stored there yet, and
// reports whether it did. On files the test and the creation are one
// step (O_EXCL), so that of two processes racing for the name exactly one
// wins; object stores use a conditional write (If-None-Match).
func (l *Location) Create(ctx context.Context, name string, data []byte) (bool, error) {
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
		return false, fmt.Errorf("create %s: %w", l.URI(name), err)
	}
	return true, nil
}

// WriteWith stores what fn writes under name, streamed rather than
// buffered whole; readers see all of it or nothing. An error from fn
// abandons the object.
func (l *Location) WriteWith(ctx context.Context, name string, fn func(io.Writer) error) error {
	// Cancelling the writer's context is how gocloud.dev/blob abandons
	// an object instead of committing what was written so far.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := l.bucket.NewWriter(wctx, l.key(name), nil)
	if err != nil {
		return fmt.Errorf("write %s: %w", l.URI(name), err)
	}
	if err := fn(w); err != nil {
		cancel()
		_ = w.Close()
		return fmt.Errorf("write %s: %w", l.URI(name), err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("write %s: %w", l.URI(name), err)
	}
	return nil
}

// NewReader opens the object called name for streaming and returns its
// size.
func (l *Location) NewReader(ctx context.Context, name string) (io.ReadCloser, int64, error) {
	r, err := l.bucket.NewReader(ctx, l.key(name), nil)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil, 0, fmt.Errorf("read %s: %w", l.URI(name), os.ErrNotExist)
		}
		return nil, 0, fmt.Errorf("read %s: %w", l.URI(name), err)
	}
	return r, r.Size(), nil
}

// Upload copies a local file into the Location.
func (l *Location) Upload(ctx context.Context, name, localPath string) (int64, error) {
	f, err := os.Open(localPath)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w, err := l.bucket.NewWriter(ctx, l.key(name), nil)
	if err != nil {
		return 0, fmt.Errorf("upload %s to %s: %w", localPath, l.URI(name), err)
	}
	n, err := io.Copy(w, f)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("upload %s to %s: %w", localPath, l.URI(name), err)
	}
	return n, nil
}

// Download copies an object into a new local file.
func (l *Location) Download(ctx context.Context, name, localPath string) error {
	r, err := l.bucket.NewReader(ctx, l.key(name), nil)
	if err != nil {
		return fmt.Errorf("download %s: %w", l.URI(name), err)
	}
	defer r.Close()
	f, err := os.Create(localPath)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return fmt.Errorf("download %s: %w", l.URI(name), err)
	}
	return f.Close()
}

func (l *Location) Delete(ctx context.Context, name string) error {
	err := l.bucket.Delete(ctx, l.key(name))
	if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("delete %s: %w", l.URI(name), err)
	}
	return nil
}

// DeleteAll removes everything under the Location.
func (l *Location) DeleteAll(ctx context.Context) error {
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

// IsLocal reports a location on the local file system (a path or a file://
// URI), where files can be renamed, appended to and truncated.
func (l *Location) IsLocal() bool { return l.scheme == "file" }

// Path is the local path of a name under a local location.
func (l *Location) Path(name string) string { return "/" + l.key(name) }

// Base is the last element of the location's path.
func (l *Location) Base() string { return path.Base(l.prefix) }

// URI is the string that Open turns into the object called name under l:
// what a split or a committable records, so that any process can reach it.
func (l *Location) URI(name string) string { return l.Join(name).String() }

// Exists reports whether an object is stored under name.
func (l *Location) Exists(ctx context.Context, name string) (bool, error) {
	ok, err := l.bucket.Exists(ctx, l.key(name))
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", l.URI(name), err)
	}
	return ok, nil
}

// SubDirs lists the names of the directories right under l.
func (l *Location) SubDirs(ctx context.Context) ([]string, error) {
	it := l.bucket.List(&blob.ListOptions{Prefix: l.key(""), Delimiter: "/"})
	var dirs []string
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return dirs, nil
		}
		if err != nil {
			return dirs, fmt.Errorf("list %s: %w", l, err)
		}
		if obj.IsDir {
			dirs = append(dirs, path.Base(strings.TrimSuffix(obj.Key, "/")))
		}
	}
}

// Object is a stored object found by Walk.
type Object struct {
	// Name is the object's key relative to the location walked, with "/"
	// between directories.
	Name string
	Size int64
}

// Walk lists every object below l in key order. skipDir is asked about
// every directory on the way (its name relative to l) and skips it, and
// everything below it, when it returns true; it also sees the last element
// of every object's name. A location that names one object (a file) lists
// that object alone, with the name ".".
func (l *Location) Walk(ctx context.Context, skip func(name string) bool) ([]Object, error) {
	if l.IsLocal() {
		return l.walkLocal(ctx, skip)
	}
	if attrs, err := l.bucket.Attributes(ctx, l.prefix); err == nil && l.prefix != "" {
		return []Object{{Name: ".", Size: attrs.Size}}, nil
	}
	var out []Object
	var walk func(prefix string) error
	walk = func(prefix string) error {
		it := l.bucket.List(&blob.ListOptions{Prefix: prefix, Delimiter: "/"})
		for {
			obj, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("list %s: %w", l, err)
			}
			rel := strings.TrimPrefix(strings.TrimSuffix(obj.Key, "/"), l.key(""))
			if skip != nil && skip(rel) {
				continue
			}
			if obj.IsDir {
				if err := walk(obj.Key); err != nil {
					return err
				}
				continue
			}
			out = append(out, Object{Name: rel, Size: obj.Size})
		}
	}
	if err := walk(l.key("")); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		// An object store has no empty directories: a prefix without
		// objects is what a missing directory looks like.
		if ok, _ := l.bucket.IsAccessible(ctx); !ok {
			return nil, fmt.Errorf("list %s: bucket not accessible", l)
		}
	}
	return out, nil
}

func (l *Location) walkLocal(ctx context.Context, skip func(name string) bool) ([]Object, error) {
	root := l.Path("")
	if l.prefix == "" {
		root = "/"
	}
	root = strings.TrimSuffix(root, "/")
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", l, err)
	}
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("list %s: not a regular file or directory", l)
		}
		return []Object{{Name: ".", Size: fi.Size()}}, nil
	}
	var out []Object
	// The trailing separator makes WalkDir follow a root that is a link
	// to a directory.
	err = filepath.WalkDir(root+"/", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if skip != nil && skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		// Follow links to files, but not to directories, which could
		// form cycles.
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			out = append(out, Object{Name: rel, Size: fi.Size()})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", l, err)
	}
	return out, nil
}

// Size is the length of the object called name.
func (l *Location) Size(ctx context.Context, name string) (int64, error) {
	attrs, err := l.bucket.Attributes(ctx, l.key(name))
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return 0, fmt.Errorf("stat %s: %w", l.URI(name), os.ErrNotExist)
		}
		return 0, fmt.Errorf("stat %s: %w", l.URI(name), err)
	}
	return attrs.Size, nil
}

// OpenAt reads the object called name from byte offset off to its end.
func (l *Location) OpenAt(ctx context.Context, name string, off int64) (io.ReadCloser, error) {
	r, err := l.bucket.NewRangeReader(ctx, l.key(name), off, -1, nil)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil, fmt.Errorf("read %s: %w", l.URI(name), os.ErrNotExist)
		}
		return nil, fmt.Errorf("read %s at offset %d: %w", l.URI(name), off, err)
	}
	return r, nil
}

// Copy stores a copy of the object called from under the name to, both
// under l: on an object store the copy happens inside the store.
func (l *Location) Copy(ctx context.Context, to, from string) error {
	if err := l.bucket.Copy(ctx, l.key(to), l.key(from), nil); err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return fmt.Errorf("copy %s: %w", l.URI(from), os.ErrNotExist)
		}
		return fmt.Errorf("copy %s to %s: %w", l.URI(from), to, err)
	}
	return nil
}

// ReaderAt reads one object at any offset. Formats such as CSV read a file
// front to back through io.ReaderAt, which on an object store would be one
// request per buffer: ReaderAt keeps the last ranged read open and carries
// on with it while reads follow each other, and opens a new one only when a
// read jumps (a Parquet footer, say). It is not safe for concurrent use.
type ReaderAt struct {
	ctx  context.Context
	loc  *Location
	name string
	size int64
	r    io.ReadCloser
	pos  int64 // offset of the next byte r returns
}

// NewReaderAt opens the object called name for reading at any offset.
func (l *Location) NewReaderAt(ctx context.Context, name string) (*ReaderAt, error) {
	size, err := l.Size(ctx, name)
	if err != nil {
		return nil, err
	}
	return &ReaderAt{ctx: ctx, loc: l, name: name, size: size}, nil
}

// Size is the object's length when it was opened.
func (r *ReaderAt) Size() int64 { return r.size }

// ReadAt implements io.ReaderAt.
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read %s: negative offset %d", r.loc.URI(r.name), off)
	}
	if off >= r.size {
		return 0, io.EOF
	}
	if r.r == nil || off != r.pos {
		if r.r != nil {
			r.r.Close()
			r.r = nil
		}
		rc, err := r.loc.OpenAt(r.ctx, r.name, off)
		if err != nil {
			return 0, err
		}
		r.r, r.pos = rc, off
	}
	want := min(int64(len(p)), r.size-off)
	n, err := io.ReadFull(r.r, p[:want])
	r.pos += int64(n)
	if err != nil {
		r.r.Close()
		r.r = nil
		return n, fmt.Errorf("read %s at offset %d: %w", r.loc.URI(r.name), off+int64(n), err)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Close ends the open ranged read, if any.
func (r *ReaderAt) Close() error {
	if r.r == nil {
		return nil
	}
	err := r.r.Close()
	r.r = nil
	return err
}
