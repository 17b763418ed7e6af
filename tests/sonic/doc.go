// Package sonic holds a corpus of CONFIG_DB entries in the forms SONiC's own
// tools and samples produce (corpus.json, one source note per case: where
// the shape comes from; the values are ours) and a whole config_db.json in
// sonic-cfggen's style (config_db.json), plus an independent rendering of
// a config_db.json into Redis hashes as SONiC's ConfigDBConnector does it.
//
// The schema package parses every case (schema/corpus_test.go), and the
// swctl end-to-end tests load and save the file against a real
// redis-server (tests/swctle2e). It must not import switchyard's packages:
// it is the independent side of those comparisons.
package sonic
