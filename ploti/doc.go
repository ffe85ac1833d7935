// Package ploti holds the wire types of the Ploti Data Feeds API as the
// client reads them: events, versions, manifests, schemas and datasets
// (docs/wire.md sections 2-4).
//
// It does no I/O. fetch decodes into these types, apply decides on them and
// replica wires the two; the emulator deliberately keeps its own copies, so a
// misreading on one side of the wire is caught by the other.
//
// Decoding is tolerant, as the contract asks: unknown fields are ignored and
// fields that may be absent are pointers or zero values.
package ploti
