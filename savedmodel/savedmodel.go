package savedmodel

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"mstream/graph"
	"mstream/proto/pbparse"
	"mstream/proto/tfpb"
	"mstream/session"
	"mstream/status"
	"mstream/tensor"
)

// Keys TF's SavedModel format uses (tensorflow/cc/saved_model/constants.h).
const (
	InitOpSignatureKey = "__saved_model_init_op"
	mainOpKey          = "saved_model_main_op"
	legacyInitOpKey    = "legacy_init_op"
	assetsKey          = "saved_model_assets"
)

// Read returns the MetaGraphDef of dir whose tags are exactly tags.
func Read(dir string, tags []string) (*tfpb.MetaGraphDef, error) {
	sm := &tfpb.SavedModel{}
	pb := filepath.Join(dir, "saved_model.pb")
	txt := filepath.Join(dir, "saved_model.pbtxt")
	if b, err := os.ReadFile(pb); err == nil {
		if err := pbparse.Binary("Unparseable SavedModel", pb, b, sm); err != nil {
			return nil, err
		}
	} else if b, err2 := os.ReadFile(txt); err2 == nil {
		if err := pbparse.Text("SavedModel", txt, b, sm); err != nil {
			return nil, err
		}
	} else {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, status.Errorf(status.PermissionDenied, "reading %s: %v", pb, err)
		}
		return nil, status.Errorf(status.NotFound, "Could not find SavedModel .pb or .pbtxt at supplied export directory path: %s. Check that the directory exists and that you have the right permissions for accessing it.", dir)
	}
	want := sortedSet(tags)
	var have []string
	for _, mg := range sm.MetaGraphs {
		got := sortedSet(mg.GetMetaInfoDef().GetTags())
		if slices.Equal(got, want) {
			return mg, nil
		}
		have = append(have, "{ "+strings.Join(got, " ")+" }")
	}
	return nil, status.Errorf(status.NotFound, "Could not find meta graph def matching supplied tags: { %s }. To inspect available tag-sets in the SavedModel, please use the SavedModel CLI: `saved_model_cli`. Available tag sets: %s",
		strings.Join(tags, " "), strings.Join(have, ", "))
}

func sortedSet(v []string) []string {
	s := slices.Clone(v)
	slices.Sort(s)
	return slices.Compact(s)
}

// Load reads the MetaGraphDef of dir tagged tags, imports its graph into g
// (which should be empty, as TF's loader expects), opens a session on it
// with opts and restores and initialises it. On error nothing is left
// open.
func Load(dir string, tags []string, g *graph.Graph, opts *session.Options, runOpts *tfpb.RunOptions) (*session.Session, *tfpb.MetaGraphDef, error) {
	mg, err := Read(dir, tags)
	if err != nil {
		return nil, nil, err
	}
	if err := validate(mg.GetGraphDef()); err != nil {
		return nil, nil, err
	}
	if _, err := g.Import(mg.GetGraphDef(), &graph.ImportOptions{}); err != nil {
		return nil, nil, status.Wrap(err, "importing the graph of SavedModel %s", dir)
	}
	s, err := session.New(g, opts)
	if err != nil {
		return nil, nil, err
	}
	if err := restore(s, g, dir, mg, runOpts); err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, mg, nil
}

// validate is TF's ValidateSavedTensors, run before the graph is
// imported: every Const has a value, every constant a known, non-negative
// element count, and no library function calls itself. TF's loader
// refuses such a model with FAILED_PRECONDITION (the fuzzer-made models of
// TF's test data).
func validate(gd *tfpb.GraphDef) error {
	check := func(n *tfpb.NodeDef) error {
		v, ok := n.GetAttr()["value"]
		if !ok {
			if n.GetOp() == "Const" {
				return status.Errorf(status.FailedPrecondition, "Saved model contains node \"%s\" which is a constant tensor but no value has been provided", n.GetName())
			}
			return nil
		}
		t := v.GetTensor()
		if t == nil {
			return nil
		}
		if elems := partialElems(t.GetTensorShape()); elems < 0 {
			return status.Errorf(status.FailedPrecondition, "Saved model contains node \"%s\" (op \"%s\") which initializes from a tensor with %d elements", n.GetName(), n.GetOp(), elems)
		}
		return nil
	}
	for _, n := range gd.GetNode() {
		if err := check(n); err != nil {
			return err
		}
	}
	for _, f := range gd.GetLibrary().GetFunction() {
		for _, n := range f.GetNodeDef() {
			if err := check(n); err != nil {
				return err
			}
			if n.GetOp() == f.GetSignature().GetName() {
				return status.Errorf(status.FailedPrecondition, "Function %s is self recursive and TensorFlow does not support this scenario.", n.GetOp())
			}
		}
	}
	return nil
}

// partialElems is PartialTensorShape::num_elements: -1 when the rank or a
// dimension is unknown (negative).
func partialElems(s *tfpb.TensorShapeProto) int64 {
	if s.GetUnknownRank() {
		return -1
	}
	n := int64(1)
	for _, d := range s.GetDim() {
		if d.GetSize() < 0 {
			return -1
		}
		n *= d.GetSize()
	}
	return n
}

func restore(s *session.Session, g *graph.Graph, dir string, mg *tfpb.MetaGraphDef, runOpts *tfpb.RunOptions) error {
	assets, err := assetFeeds(g, dir, mg)
	if err != nil {
		return err
	}
	prefix := filepath.Join(dir, "variables", "variables")
	if sd := mg.GetSaverDef(); sd != nil && fileExists(prefix+".index") {
		restoreOp := g.Lookup(strings.TrimPrefix(sd.RestoreOpName, "^"))
		fname, err := output(g, sd.FilenameTensorName)
		if err != nil || restoreOp == nil {
			return status.Errorf(status.NotFound, "SavedModel %s: the saver's restore op '%s' or filename tensor '%s' is not in its graph", dir, sd.RestoreOpName, sd.FilenameTensorName)
		}
		feeds := append([]session.Feed{{Output: fname, Tensor: tensor.FromStrings(nil, []string{prefix})}}, assets...)
		if _, _, err := s.Run(runOpts, feeds, nil, []*graph.Node{restoreOp}); err != nil {
			return status.Wrap(err, "restoring the variables of SavedModel %s", dir)
		}
	}
	init, err := initOp(mg)
	if err != nil || init == "" {
		return err
	}
	n := g.Lookup(strings.TrimPrefix(strings.Split(init, ":")[0], "^"))
	if n == nil {
		return status.Errorf(status.NotFound, "SavedModel %s: its init op '%s' is not in its graph", dir, init)
	}
	if _, _, err := s.Run(runOpts, assets, nil, []*graph.Node{n}); err != nil {
		return status.Wrap(err, "running the init op '%s' of SavedModel %s", init, dir)
	}
	return nil
}

// initOp is the name of the op that initialises the model: TF's
// GetInitOp order.
func initOp(mg *tfpb.MetaGraphDef) (string, error) {
	if sig, ok := mg.GetSignatureDef()[InitOpSignatureKey]; ok {
		if t, ok := sig.GetOutputs()[InitOpSignatureKey]; ok {
			return t.GetName(), nil
		}
	}
	for _, key := range []string{mainOpKey, legacyInitOpKey} {
		if c, ok := mg.GetCollectionDef()[key]; ok {
			v := c.GetNodeList().GetValue()
			if len(v) != 1 {
				return "", status.Errorf(status.FailedPrecondition, "Expected exactly one main op in : %s", key)
			}
			return v[0], nil
		}
	}
	return "", nil
}

// assetFeeds feeds each asset's tensor the path of its file under
// <dir>/assets.
func assetFeeds(g *graph.Graph, dir string, mg *tfpb.MetaGraphDef) ([]session.Feed, error) {
	defs := mg.GetAssetFileDef()
	if len(defs) == 0 {
		for _, a := range mg.GetCollectionDef()[assetsKey].GetAnyList().GetValue() {
			d := &tfpb.AssetFileDef{}
			if err := anypb.UnmarshalTo(a, d, proto.UnmarshalOptions{}); err != nil {
				return nil, status.Errorf(status.InvalidArgument, "SavedModel %s: asset collection entry: %v", dir, err)
			}
			defs = append(defs, d)
		}
	}
	var feeds []session.Feed
	for _, d := range defs {
		o, err := output(g, d.GetTensorInfo().GetName())
		if err != nil {
			return nil, status.Errorf(status.NotFound, "SavedModel %s: asset %s: %v", dir, d.GetFilename(), err)
		}
		path := filepath.Join(dir, "assets", d.GetFilename())
		feeds = append(feeds, session.Feed{Output: o, Tensor: tensor.FromStrings(nil, []string{path})})
	}
	return feeds, nil
}

// output resolves "node:index" (index 0 when absent) in g.
func output(g *graph.Graph, name string) (graph.Output, error) {
	n, idx, _ := strings.Cut(name, ":")
	i := 0
	if idx != "" {
		var err error
		if i, err = strconv.Atoi(idx); err != nil {
			return graph.Output{}, status.InvalidArg("tensor name '%s': bad index", name)
		}
	}
	node := g.Lookup(n)
	if node == nil || i < 0 || i >= node.NumOutputs() {
		return graph.Output{}, status.Errorf(status.NotFound, "tensor '%s' is not in the graph", name)
	}
	return node.Output(i), nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
