package file

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/weirproject/weir/internal/storage"
)

// Paths that name an object store (s3://bucket/key?options) go through
// the storage layer that checkpoints use; plain paths and file:// URIs stay
// on the local file system, where the connector can rename, append and
// truncate. Object stores can do none of the three, which is why the sinks
// write part files locally and upload them whole (see partStore).

// isRemote reports a path that names an object in an object store.
func isRemote(p string) bool {
	scheme, _, ok := strings.Cut(p, "://")
	return ok && scheme != "file"
}

// localPath turns a file:// URI into the path it names.
func localPath(p string) string {
	if rest, ok := strings.CutPrefix(p, "file://"); ok {
		return rest
	}
	return p
}

// openObject opens the directory that holds the object a URI names, and
// returns it with the object's name in it.
func openObject(ctx context.Context, uri string) (*storage.Location, string, error) {
	loc, err := storage.Open(ctx, uri)
	if err != nil {
		return nil, "", fmt.Errorf("file: %w", err)
	}
	return loc.Parent(), loc.Base(), nil
}

// listRemote lists the objects below root, an object store URI, that are
// not hidden, in key order.
func listRemote(ctx context.Context, root string) ([]fileInfo, error) {
	loc, err := storage.Open(ctx, root)
	if err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	objs, err := loc.Walk(ctx, func(name string) bool {
		return hidden(name[strings.LastIndexByte(name, '/')+1:])
	})
	if err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	out := make([]fileInfo, 0, len(objs))
	for _, o := range objs {
		p := root
		if o.Name != "." {
			p = loc.URI(o.Name)
		}
		out = append(out, fileInfo{path: p, size: o.Size})
	}
	return out, nil
}

// readerAtCloser is an open file or object to decode.
type readerAtCloser interface {
	io.ReaderAt
	io.Closer
}

// openRandom opens a file or object for reads at any offset, and returns
// its size.
func openRandom(ctx context.Context, p string) (readerAtCloser, int64, error) {
	if isRemote(p) {
		loc, name, err := openObject(ctx, p)
		if err != nil {
			return nil, 0, err
		}
		r, err := loc.NewReaderAt(ctx, name)
		if err != nil {
			return nil, 0, fmt.Errorf("file: %w", err)
		}
		return r, r.Size(), nil
	}
	f, err := os.Open(localPath(p))
	if err != nil {
		return nil, 0, fmt.Errorf("file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("file: %w", err)
	}
	return f, fi.Size(), nil
}

// openSequential opens a file or object for reading from offset off on.
func openSequential(ctx context.Context, p string, off int64) (io.ReadCloser, error) {
	if isRemote(p) {
		loc, name, err := openObject(ctx, p)
		if err != nil {
			return nil, err
		}
		r, err := loc.OpenAt(ctx, name, off)
		if err != nil {
			return nil, fmt.Errorf("file: %w", err)
		}
		return r, nil
	}
	f, err := os.Open(localPath(p))
	if err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("file: seek %s to offset %d: %w", p, off, unwrapPath(err))
	}
	return f, nil
}
