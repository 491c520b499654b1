// Package testall holds the test of scripts/test_all.sh, the driver behind
// `make test`: its summary is the one line CI and users read, so its
// counting of passed, failed, skipped and expected-failure results is checked
// on made-up steps rather than trusted. It has no code of its own.
package testall
