package catalog

import (
	"encoding/json"
	"fmt"
)

// snapshot is a whole catalog, temporary objects and the current catalog
// and database included, as a job submitted to a cluster carries it.
type snapshot struct {
	Catalogs map[string]map[string]*database
	Current  [2]string
}

// Snapshot encodes the whole catalog (temporary objects too) and the
// current catalog and database, for a worker process that plans the same
// statement (weir sql --jobmanager). FromSnapshot decodes it.
func (c *Catalog) Snapshot() ([]byte, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	data, err := json.Marshal(snapshot{Catalogs: c.catalogs, Current: [2]string{c.current.catalog, c.current.database}})
	if err != nil {
		return nil, fmt.Errorf("catalog: snapshot: %w", err)
	}
	return data, nil
}

// FromSnapshot returns a catalog, kept in memory only, from what Snapshot
// encoded.
func FromSnapshot(data []byte) (*Catalog, error) {
	var s snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("catalog: snapshot: %w", err)
	}
	c := New()
	for name, dbs := range s.Catalogs {
		c.catalogs[name] = map[string]*database{}
		for dbName, d := range dbs {
			if d == nil {
				d = newDatabase()
			}
			if d.Tables == nil {
				d.Tables = map[string]*Table{}
			}
			if d.Views == nil {
				d.Views = map[string]*View{}
			}
			if d.Functions == nil {
				d.Functions = map[string]*Function{}
			}
			c.catalogs[name][dbName] = d
		}
	}
	if dbs, ok := c.catalogs[s.Current[0]]; ok {
		if _, ok := dbs[s.Current[1]]; ok {
			c.current.catalog, c.current.database = s.Current[0], s.Current[1]
		}
	}
	return c, nil
}
