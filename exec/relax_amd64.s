#include "textflag.h"

// func cpuRelax()
TEXT ·cpuRelax(SB), NOSPLIT, $0-0
	PAUSE
	RET

// func cpuidLeaf7ECX() uint32: CPUID leaf 7, sub-leaf 0's ECX, or 0
// where the highest leaf is below 7.
TEXT ·cpuidLeaf7ECX(SB), NOSPLIT, $0-4
	MOVL $0, AX
	MOVL $0, CX
	CPUID
	CMPL AX, $7
	JLT  none
	MOVL $7, AX
	MOVL $0, CX
	CPUID
	MOVL CX, ret+0(FP)
	RET
none:
	MOVL $0, ret+0(FP)
	RET

// func rdpid() uint32: RDPID RAX (F3 0F C7 /7), which the assembler
// does not name.
TEXT ·rdpid(SB), NOSPLIT, $0-4
	BYTE $0xF3; BYTE $0x0F; BYTE $0xC7; BYTE $0xF8
	MOVL AX, ret+0(FP)
	RET
