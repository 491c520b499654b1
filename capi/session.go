package main

/*
#include "internal.h"
*/
import "C"

import (
	"runtime/cgo"
	"sync"
	"unsafe"

	"mstream/cenv"
	"mstream/graph"
	"mstream/proto/pbparse"
	"mstream/proto/tfpb"
	"mstream/savedmodel"
	"mstream/session"
	"mstream/status"
	"mstream/tensor"

	// The GPU device and its kernels: device/cuda registers the GPUs
	// (device.OpenGPUs) and kernels/cuda the GPU kernels that placement
	// consults. Neither needs a GPU to load.
	_ "mstream/kernels/cuda"
)

// sessionObj is the Go side of a TF_Session; it holds a reference to its
// graph until TF_DeleteSession.
type sessionObj struct {
	s *session.Session
	g *graphObj
}

// feedBlocks holds *feedBlock: the memory of TF_SessionRun's feed copies,
// taken again by a later Run once one has returned. One pool for every
// session, which owns nothing: the runtime drops a pool only at the
// second collection after its last Put, so a pool field of sessionObj
// kept each deleted session, with its constants and allocator regions,
// alive a collection longer, and a client that made sessions one after
// another grew its live heap, and with it the next collection's goal and
// the sessions that one kept, from cycle to cycle.
var feedBlocks sync.Pool

// takeFeedBlock returns a block for a Run's feed copies: an earlier
// Run's, or a new one.
func takeFeedBlock() *feedBlock {
	if b, _ := feedBlocks.Get().(*feedBlock); b != nil {
		return b
	}
	return new(feedBlock)
}

// keepFeedBlock keeps a succeeded Run's block for a later Run, when it is
// worth keeping (feedBlock.reusable).
func keepFeedBlock(b *feedBlock) {
	if b.reusable() {
		feedBlocks.Put(b)
	}
}

func sessionOf(h C.uintptr_t) (*sessionObj, error) {
	if so, ok := handleValue(h).(*sessionObj); ok {
		return so, nil
	}
	return nil, status.InvalidArg("session is NULL")
}

//export msNewSessionOptions
func msNewSessionOptions() C.uintptr_t {
	return C.uintptr_t(cgo.NewHandle(&session.Options{Config: &tfpb.ConfigProto{}}))
}

//export msDeleteSessionOptions
func msDeleteSessionOptions(h C.uintptr_t) {
	defer recoverQuiet()
	if h != 0 {
		cgo.Handle(h).Delete()
	}
}

//export msSetTarget
func msSetTarget(h C.uintptr_t, target *C.char) {
	defer recoverQuiet()
	if o, ok := handleValue(h).(*session.Options); ok {
		o.Target = goStr(target)
	}
}

func parseConfig(data []byte) (*tfpb.ConfigProto, error) {
	c := &tfpb.ConfigProto{}
	if err := pbparse.Binary("Unparseable ConfigProto", "TF_SetConfig's proto", data, c); err != nil {
		return nil, err
	}
	return c, nil
}

//export msSetConfig
func msSetConfig(h C.uintptr_t, p unsafe.Pointer, n C.size_t, s *C.TF_Status) {
	defer recoverTo(s, "TF_SetConfig")
	o, ok := handleValue(h).(*session.Options)
	if !ok {
		setStatus(s, nullArg("TF_SetConfig", "options"))
		return
	}
	if n > 0 && p == nil {
		setStatus(s, nullArg("TF_SetConfig", "proto"))
		return
	}
	c, err := parseConfig(goBytes(p, n))
	if err == nil {
		o.Config = c
	}
	setStatus(s, err)
}

//export msValidateConfig
func msValidateConfig(p unsafe.Pointer, n C.size_t, s *C.TF_Status) {
	defer recoverTo(s, "TFE_ContextOptionsSetConfig")
	_, err := parseConfig(goBytes(p, n))
	setStatus(s, err)
}

//export msNewSession
func msNewSession(g *C.TF_Graph, opts C.uintptr_t, s *C.TF_Status) C.uintptr_t {
	defer recoverTo(s, "TF_NewSession")
	o, err := graphOf(g)
	if err != nil {
		setStatus(s, err)
		return 0
	}
	so := &session.Options{}
	if v, ok := handleValue(opts).(*session.Options); ok {
		c := *v
		so = &c
	}
	so.Getenv = cenv.Getenv
	sess, err := session.New(o.g, so)
	if err != nil {
		setStatus(s, err)
		return 0
	}
	o.ref()
	setStatus(s, nil)
	return C.uintptr_t(cgo.NewHandle(&sessionObj{s: sess, g: o}))
}

// msLoadSessionFromSavedModel is TF_LoadSessionFromSavedModel: the
// SavedModel at export_dir with exactly the given tags, imported into graph
// (which should be empty), restored and initialised by package savedmodel.
// meta_graph_def, when not NULL, receives the chosen MetaGraphDef.
//
//export msLoadSessionFromSavedModel
func msLoadSessionFromSavedModel(opts C.uintptr_t, runOpts *C.TF_Buffer, dir *C.char, tags **C.char, ntags C.int, g *C.TF_Graph, mgBuf *C.TF_Buffer, s *C.TF_Status) C.uintptr_t {
	defer recoverTo(s, "TF_LoadSessionFromSavedModel")
	o, err := graphOf(g)
	if err != nil {
		setStatus(s, err)
		return 0
	}
	if dir == nil {
		setStatus(s, nullArg("TF_LoadSessionFromSavedModel", "export_dir"))
		return 0
	}
	if ntags < 0 || ntags > 0 && tags == nil {
		setStatus(s, nullArg("TF_LoadSessionFromSavedModel", "tags"))
		return 0
	}
	var tagList []string
	for _, t := range unsafe.Slice(tags, int(ntags)) {
		tagList = append(tagList, goStr(t))
	}
	var ro *tfpb.RunOptions
	if runOpts != nil && runOpts.length > 0 {
		ro = &tfpb.RunOptions{}
		if err := pbparse.Binary("Unparseable RunOptions proto", "TF_LoadSessionFromSavedModel's run_options", bufferBytes(runOpts), ro); err != nil {
			setStatus(s, err)
			return 0
		}
	}
	so := &session.Options{}
	if v, ok := handleValue(opts).(*session.Options); ok {
		c := *v
		so = &c
	}
	so.Getenv = cenv.Getenv
	sess, mg, err := savedmodel.Load(goStr(dir), tagList, o.g, so, ro)
	if err != nil {
		setStatus(s, err)
		return 0
	}
	if mgBuf != nil {
		if err := writeProto(mgBuf, mg); err != nil {
			sess.Close()
			setStatus(s, err)
			return 0
		}
	}
	o.ref()
	setStatus(s, nil)
	return C.uintptr_t(cgo.NewHandle(&sessionObj{s: sess, g: o}))
}

//export msCloseSession
func msCloseSession(h C.uintptr_t, s *C.TF_Status) {
	defer recoverTo(s, "TF_CloseSession")
	so, err := sessionOf(h)
	if err == nil {
		err = so.s.Close()
	}
	setStatus(s, err)
}

//export msDeleteSession
func msDeleteSession(h C.uintptr_t, s *C.TF_Status) {
	defer recoverTo(s, "TF_DeleteSession")
	so, err := sessionOf(h)
	if err != nil {
		setStatus(s, nil) // TF_DeleteSession(NULL) is a no-op
		return
	}
	// Closing twice is harmless; a session deleted without TF_CloseSession
	// is closed here, as TF does.
	_ = so.s.Close()
	cgo.Handle(h).Delete()
	so.g.unref()
	setStatus(s, nil)
}

// runArgs converts the C arrays of a run into Go values: with values the
// feeds (their outputs and copies of the caller's tensors), else the fed
// outputs alone.
//
// blk, when not nil, holds the copies of the fixed-size feeds (feedCopies);
// the caller reuses it only once the Run has succeeded and returned.
func runArgs(so *sessionObj, inputs *C.TF_Output, values **C.TF_Tensor, nin C.int,
	outputs *C.TF_Output, nout C.int, targets **C.TF_Operation, ntargets C.int, withValues bool, blk *feedBlock,
) (feeds []session.Feed, feedOuts []graph.Output, fetches []graph.Output, tgts []*graph.Node, err error) {
	if nin > 0 && (inputs == nil || (withValues && values == nil)) {
		return nil, nil, nil, nil, status.InvalidArg("inputs are NULL but ninputs is %d", int(nin))
	}
	if nout > 0 && outputs == nil {
		return nil, nil, nil, nil, status.InvalidArg("outputs are NULL but noutputs is %d", int(nout))
	}
	if ntargets > 0 && targets == nil {
		return nil, nil, nil, nil, status.InvalidArg("target_opers are NULL but ntargets is %d", int(ntargets))
	}
	ins := unsafe.Slice(inputs, max(int(nin), 0))
	// With values the feeds carry the outputs and feedOuts stays nil.
	if withValues {
		feeds = make([]session.Feed, len(ins))
	} else {
		feedOuts = make([]graph.Output, len(ins))
	}
	fetches = make([]graph.Output, 0, max(int(nout), 0))
	for i := range ins {
		out, err := outputIn(so.g, &ins[i])
		if err != nil {
			return nil, nil, nil, nil, status.Wrap(err, "input %d", i)
		}
		if withValues {
			feeds[i].Output = out
		} else {
			feedOuts[i] = out
		}
	}
	if withValues {
		if bad, err := feedCopies(feeds, unsafe.Slice(values, len(ins)), blk); err != nil {
			return nil, nil, nil, nil, status.Wrap(err, "input %d (%s)", bad, feeds[bad].Output)
		}
	}
	for i, o := range unsafe.Slice(outputs, max(int(nout), 0)) {
		out, err := outputIn(so.g, &o)
		if err != nil {
			return nil, nil, nil, nil, status.Wrap(err, "output %d", i)
		}
		fetches = append(fetches, out)
	}
	for i, op := range unsafe.Slice(targets, max(int(ntargets), 0)) {
		n, err := nodeIn(so.g, op)
		if err != nil {
			return nil, nil, nil, nil, status.Wrap(err, "target %d", i)
		}
		tgts = append(tgts, n)
	}
	return feeds, feedOuts, fetches, tgts, nil
}

// writeOutputs hands the results to the caller as new TF_Tensors; on error
// every output is NULL.
func writeOutputs(ts []*tensor.Tensor, fetches []graph.Output, dst **C.TF_Tensor, nout C.int) error {
	outs := unsafe.Slice(dst, max(int(nout), 0))
	if len(ts) != len(outs) {
		return status.Errorf(status.Internal, "session returned %d tensors for %d outputs", len(ts), len(outs))
	}
	for i, t := range ts {
		ct, err := cTensor(t)
		if err != nil && i < len(fetches) {
			err = status.Wrap(err, "fetch %s:%d", fetches[i].Node.Name, fetches[i].Index)
		}
		if err != nil {
			deleteOutputs(dst, nout) // the slots from i on are still clear
			return err
		}
		outs[i] = ct
	}
	return nil
}

// deleteOutputs deletes the outputs writeOutputs made, for a Run that
// fails after it.
func deleteOutputs(dst **C.TF_Tensor, nout C.int) {
	if dst == nil {
		return
	}
	outs := unsafe.Slice(dst, max(int(nout), 0))
	for i, t := range outs {
		if t != nil {
			C.TF_DeleteTensor(t)
			outs[i] = nil
		}
	}
}

func clearOutputs(dst **C.TF_Tensor, nout C.int) {
	if dst == nil {
		return
	}
	clear(unsafe.Slice(dst, max(int(nout), 0)))
}

//export msSessionRun
func msSessionRun(h C.uintptr_t, runOpts *C.TF_Buffer, inputs *C.TF_Output, values **C.TF_Tensor, nin C.int,
	outputs *C.TF_Output, outValues **C.TF_Tensor, nout C.int, targets **C.TF_Operation, ntargets C.int,
	md *C.TF_Buffer, s *C.TF_Status) {
	defer recoverTo(s, "TF_SessionRun")
	clearOutputs(outValues, nout)
	err := func() error {
		so, err := sessionOf(h)
		if err != nil {
			return err
		}
		if nout > 0 && outValues == nil {
			return nullArg("TF_SessionRun", "output_values")
		}
		var ro *tfpb.RunOptions
		if runOpts != nil {
			ro = &tfpb.RunOptions{}
			if err := pbparse.Binary("Unparseable RunOptions proto", "TF_SessionRun's run_options", bufferBytes(runOpts), ro); err != nil {
				return err
			}
		}
		// The feeds' copies go to a block of an earlier Run: a session
		// keeps no feed once a Run has returned, and after a success no
		// kernel of it still runs (a timed-out step's may, so a failed
		// Run's block is left to the collector).
		blk := takeFeedBlock()
		feeds, _, fetches, tgts, err := runArgs(so, inputs, values, nin, outputs, nout, targets, ntargets, true, blk)
		if err != nil {
			return err
		}
		// The step's own tensors go straight into the caller's TF_Tensors.
		_, meta, err := so.s.RunTo(ro, feeds, fetches, tgts, func(ts []*tensor.Tensor) error {
			return writeOutputs(ts, fetches, outValues, nout)
		})
		if err != nil {
			return err
		}
		keepFeedBlock(blk)
		if md != nil {
			if meta == nil {
				meta = &tfpb.RunMetadata{}
			}
			if err := writeProto(md, meta); err != nil {
				deleteOutputs(outValues, nout)
				return err
			}
		}
		return nil
	}()
	if err != nil { // TF_SessionRun set OK before the call
		setStatus(s, err)
	}
}

//export msSessionPRunSetup
func msSessionPRunSetup(h C.uintptr_t, inputs *C.TF_Output, nin C.int, outputs *C.TF_Output, nout C.int,
	targets **C.TF_Operation, ntargets C.int, handle **C.char, s *C.TF_Status) {
	defer recoverTo(s, "TF_SessionPRunSetup")
	err := func() error {
		if handle == nil {
			return nullArg("TF_SessionPRunSetup", "handle")
		}
		*handle = nil
		so, err := sessionOf(h)
		if err != nil {
			return err
		}
		_, feedOuts, fetches, tgts, err := runArgs(so, inputs, nil, nin, outputs, nout, targets, ntargets, false, nil)
		if err != nil {
			return err
		}
		hs, err := so.s.PRunSetup(feedOuts, fetches, tgts)
		if err != nil {
			return err
		}
		*handle = C.CString(hs)
		C.ms_live(C.MS_LIVE_PRUN_HANDLE, 1)
		return nil
	}()
	setStatus(s, err)
}

//export msSessionPRun
func msSessionPRun(h C.uintptr_t, handle *C.char, inputs *C.TF_Output, values **C.TF_Tensor, nin C.int,
	outputs *C.TF_Output, outValues **C.TF_Tensor, nout C.int, targets **C.TF_Operation, ntargets C.int, s *C.TF_Status) {
	defer recoverTo(s, "TF_SessionPRun")
	clearOutputs(outValues, nout)
	err := func() error {
		so, err := sessionOf(h)
		if err != nil {
			return err
		}
		if handle == nil {
			return nullArg("TF_SessionPRun", "handle")
		}
		if nout > 0 && outValues == nil {
			return nullArg("TF_SessionPRun", "output_values")
		}
		// No feed block: a partial run keeps its feeds until its fetches run.
		feeds, _, fetches, tgts, err := runArgs(so, inputs, values, nin, outputs, nout, targets, ntargets, true, nil)
		if err != nil {
			return err
		}
		ts, err := so.s.PRun(C.GoString(handle), feeds, fetches, tgts)
		if err != nil {
			return err
		}
		return writeOutputs(ts, fetches, outValues, nout)
	}()
	setStatus(s, err)
}

//export msSessionListDevices
func msSessionListDevices(h C.uintptr_t, s *C.TF_Status) *C.TF_DeviceList {
	defer recoverTo(s, "TF_SessionListDevices")
	so, err := sessionOf(h)
	if err != nil {
		setStatus(s, err)
		return nil
	}
	devs := so.s.Devices()
	l := C.ms_new_device_list(C.int(len(devs)))
	names := unsafe.Slice(l.names, len(devs))
	types := unsafe.Slice(l.types, len(devs))
	mem := unsafe.Slice(l.memory, len(devs))
	inc := unsafe.Slice(l.incarnation, len(devs))
	for i, d := range devs {
		names[i] = C.CString(d.Name)
		types[i] = C.CString(d.Type)
		mem[i] = C.int64_t(d.MemoryBytes)
		inc[i] = C.uint64_t(d.Incarnation)
	}
	setStatus(s, nil)
	return l
}

//export msSessionStats
func msSessionStats(h C.uintptr_t, buf *C.TF_Buffer, s *C.TF_Status) {
	defer recoverTo(s, "MS_SessionStats")
	so, err := sessionOf(h)
	var js []byte
	if err == nil {
		js, err = so.s.StatsJSON()
	}
	if err == nil {
		err = writeBuffer(buf, js)
	}
	setStatus(s, err)
}

//export msSessionWriteTrace
func msSessionWriteTrace(h C.uintptr_t, path *C.char, s *C.TF_Status) {
	defer recoverTo(s, "MS_SessionWriteTrace")
	so, err := sessionOf(h)
	if err == nil && path == nil {
		err = nullArg("MS_SessionWriteTrace", "path")
	}
	if err == nil {
		err = so.s.WriteTrace(C.GoString(path))
	}
	setStatus(s, err)
}

//export msSessionConfig
func msSessionConfig(h C.uintptr_t, buf *C.TF_Buffer, s *C.TF_Status) {
	defer recoverTo(s, "MS_SessionConfig")
	so, err := sessionOf(h)
	var js []byte
	if err == nil {
		js, err = so.s.ConfigJSON()
	}
	if err == nil {
		err = writeBuffer(buf, js)
	}
	setStatus(s, err)
}

//export msTextToBinary
func msTextToBinary(text unsafe.Pointer, n C.size_t, config C.int, buf *C.TF_Buffer, s *C.TF_Status) {
	defer recoverTo(s, "MS_TextToBinary")
	err := func() error {
		if text == nil && n > 0 {
			return nullArg("MS_TextToBinary", "text")
		}
		data := goBytes(text, n)
		if config == 0 {
			gd, err := graph.ParseTextGraphDef(data)
			if err != nil {
				return err
			}
			return writeProto(buf, gd)
		}
		c := &tfpb.ConfigProto{}
		if err := pbparse.Text("ConfigProto", "", data, c); err != nil {
			return err
		}
		return writeProto(buf, c)
	}()
	setStatus(s, err)
}
