// Package sdkdiff holds the differential tests of the server's document model against the
// real JS SDK: gen.js drives seeded sessions of SDK clients and records every change, the
// replicas' states and SDK snapshots; the tests replay them through document.Document and
// require the same JSON, garbage, sizes, presences and mutually readable snapshots.
package sdkdiff
