package sonic

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed corpus.json
var corpusJSON []byte

// ConfigDBJSON is a whole config_db.json as sonic-cfggen writes one: the
// tables switchyard handles beside DEVICE_METADATA, BGP_NEIGHBOR, ACL_TABLE
// (with a list field) and entries that are empty objects.
//
//go:embed config_db.json
var ConfigDBJSON []byte

// Case is one CONFIG_DB entry in Redis form.
type Case struct {
	Source string            `json:"source"` // key into Corpus.Sources
	Fact   string            `json:"fact"`   // what the case shows, when the source note does not say
	Table  string            `json:"table"`
	Key    string            `json:"key"`    // the part after "TABLE|"
	Fields map[string]string `json:"fields"` // the hash as SONiC stores it
	// Canonical is the hash schema.Parse renders (the fields switchyard
	// acts on; NULL=NULL when none).
	Canonical map[string]string `json:"canonical"`
	// Unknown lists the fields no one defines (schema.UnknownFields).
	Unknown []string `json:"unknown"`
}

// Corpus is corpus.json.
type Corpus struct {
	About   string            `json:"about"`
	Sources map[string]string `json:"sources"`
	Cases   []Case            `json:"cases"`
}

// Load decodes the corpus and checks every case names a known source.
func Load() (Corpus, error) {
	var c Corpus
	dec := json.NewDecoder(bytes.NewReader(corpusJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Corpus{}, fmt.Errorf("corpus.json: %w", err)
	}
	for i, k := range c.Cases {
		if _, ok := c.Sources[k.Source]; !ok {
			return Corpus{}, fmt.Errorf("corpus.json: case %d (%s|%s) names unknown source %q", i, k.Table, k.Key, k.Source)
		}
	}
	return c, nil
}

// RedisHashes renders a config_db.json as the Redis hashes SONiC's
// ConfigDBConnector (typed_to_raw) writes: key "TABLE|key"; an empty
// object becomes NULL=NULL; a list value becomes field "name@" with the
// values joined by commas; any other value its text (JSON strings
// unquoted, numbers as written).
func RedisHashes(data []byte) (map[string]map[string]string, error) {
	var file map[string]map[string]map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&file); err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for table, keys := range file {
		for key, fields := range keys {
			h := map[string]string{}
			if len(fields) == 0 {
				h["NULL"] = "NULL"
			}
			for name, raw := range fields {
				var list []string
				if json.Unmarshal(raw, &list) == nil {
					h[name+"@"] = strings.Join(list, ",")
					continue
				}
				var s string
				if json.Unmarshal(raw, &s) == nil {
					h[name] = s
					continue
				}
				h[name] = string(raw)
			}
			out[table+"|"+key] = h
		}
	}
	return out, nil
}
