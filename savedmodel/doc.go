// Package savedmodel loads TF SavedModels (saved_model.pb or
// saved_model.pbtxt) into a graph and a session, as TF's
// LoadSavedModel does for TF_LoadSessionFromSavedModel: the MetaGraphDef
// whose tag set equals the one asked for, its GraphDef imported into the
// caller's graph, the variables restored by running the SaverDef's restore
// op with the checkpoint prefix <dir>/variables/variables fed (skipped when
// there is no variables.index, as in TF), then the init op
// (__saved_model_init_op's signature, else the saved_model_main_op or
// legacy_init_op collection) with every asset's tensor fed its path under
// <dir>/assets.
//
// The session is an ordinary session.Session: its variables live in its
// resource manager (package resource), shared by every stream group.
// Errors are TF's: NOT_FOUND naming the directory when it holds no
// SavedModel, NOT_FOUND listing the tag sets it has when none matches.
package savedmodel
