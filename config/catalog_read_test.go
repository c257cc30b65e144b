package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEveryCatalogOptionIsRead fails when an option of the catalog is
// read nowhere: a documented key that does nothing misleads the user who
// sets it. It finds each catalog option's variable in options.go and
// looks for a use of it (config.Name, or Name inside this package) in
// the repository's non-test Go files other than options.go.
func TestEveryCatalogOptionIsRead(t *testing.T) {
	fset := token.NewFileSet()
	decls, err := parser.ParseFile(fset, "options.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The catalog is the variable whose value lists the options.
	var names []string
	ast.Inspect(decls, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "catalog" || len(vs.Values) != 1 {
			return true
		}
		for _, e := range vs.Values[0].(*ast.CompositeLit).Elts {
			if id, ok := e.(*ast.Ident); ok {
				names = append(names, id.Name)
			}
		}
		return false
	})
	if len(names) != len(catalog) {
		t.Fatalf("found %d names in the catalog of options.go, want %d", len(names), len(catalog))
	}
	used := map[string]bool{}
	root := ".."
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || path == filepath.Join(root, "config", "options.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		inConfig := f.Name.Name == "config" && filepath.Dir(path) == filepath.Join(root, "config")
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "config" {
					used[n.Sel.Name] = true
				}
			case *ast.Ident:
				if inConfig {
					used[n.Name] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Accepted for Flink users' configurations and validated, but with one
	// value only, which is what weir does anyway: nothing needs to read it.
	// (None at the moment: execution.checkpointing.max-concurrent-checkpoints,
	// which accepts only 1, is read by GET /jobs/{id}/checkpoints/config.)
	validatedOnly := map[string]bool{}
	for _, name := range names {
		if validatedOnly[name] {
			if used[name] {
				t.Errorf("option %s is read now: take it off validatedOnly", name)
			}
			continue
		}
		if !used[name] {
			t.Errorf("option %s (%s) is in the catalog and documented, but no code reads it: wire it or remove it",
				name, catalog[slices.Index(names, name)].info().Key)
		}
	}
}
