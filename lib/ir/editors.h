// The classes the IR's classes name as friends (GRAPHRW_IR_EDITORS in
// ir/tensor.h, and ir/access.h's): IrAccess, Builder, Rewriter and the
// inliner's InlineCopier, with the AttributeInterner. Every IR header
// includes this file (ir/ir.h at its end, ir/tensor.h through ir/ir.h), so
// any code that can name the IR's classes has these defined already, and a
// second definition of one of them (to become a friend of the IR) is a
// compile error; tests/arch/ir_edit_probe.cpp checks it, before and after
// the IR's headers.
#pragma once

#include "ir/access.h"
#include "ir/attribute_interner.h"
#include "ir/builder.h"
#include "ir/inline_copier.h"
#include "ir/rewriter.h"
