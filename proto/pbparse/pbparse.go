package pbparse

import (
	"fmt"
	"regexp"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"mstream/status"
)

// prototext reports positions as "(line L:C)", after an optional "syntax
// error" and before the reason. The protobuf runtime spaces its messages with
// a plain or a no-break space, chosen per build so that nobody matches them:
// both are accepted here, and TestText checks the result.
var textPos = regexp.MustCompile(`^proto:[\s\x{00a0}]*(syntax error)?[\s\x{00a0}]*\(line (\d+):(\d+)\):[\s\x{00a0}]*`)

// Text parses text into m strictly: unknown fields are errors. kind names the
// message in the error ("GraphDef", "ConfigProto"); source, when not empty,
// names the file or argument the text came from.
func Text(kind, source string, text []byte, m proto.Message) error {
	if err := prototext.Unmarshal(text, m); err != nil {
		return status.InvalidArg("Invalid text %s%s: %s", kind, from(source), textReason(err))
	}
	return nil
}

// textReason rewrites prototext's "proto: (line 2:3): unknown field: x" as
// "line 2, column 3: unknown field: x".
func textReason(err error) string {
	msg := err.Error()
	if sm := textPos.FindStringSubmatch(msg); sm != nil {
		reason := msg[len(sm[0]):]
		if sm[1] != "" {
			reason = "syntax error: " + reason
		}
		return fmt.Sprintf("line %s, column %s: %s", sm[2], sm[3], reason)
	}
	return msg
}

// Binary parses a binary proto into m, keeping unknown fields. prefix is TF's
// wording of the failure ("Invalid GraphDef", "Unparseable ConfigProto");
// source names the file or buffer, which the message gets with its size and
// the offset of the first top-level field that does not parse.
func Binary(prefix, source string, b []byte, m proto.Message) error {
	err := proto.Unmarshal(b, m)
	if err == nil {
		return nil
	}
	where := fmt.Sprintf("%d bytes", len(b))
	if off := badField(b); off >= 0 {
		where += fmt.Sprintf(", the field at byte %d", off)
	}
	return status.Errorf(status.InvalidArgument, "%s%s (%s): %v", prefix, from(source), where, err)
}

func from(source string) string {
	if source == "" {
		return ""
	}
	return " in " + source
}

// badField returns the offset of the first top-level field whose tag or
// value is malformed on the wire, or -1 when every field is well formed (the
// error is then inside a field's contents, a nested message or a string that
// is not UTF-8).
func badField(b []byte) int {
	for off := 0; off < len(b); {
		num, typ, n := protowire.ConsumeTag(b[off:])
		if n < 0 || num < 1 {
			return off
		}
		m := protowire.ConsumeFieldValue(num, typ, b[off+n:])
		if m < 0 {
			return off
		}
		off += n + m
	}
	return -1
}
