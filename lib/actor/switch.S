/* SPDX-License-Identifier: MIT */
/*
 * The context switch of context-switching actors (actor/fiber.c), by hand:
 * swapcontext(3) saves and restores the signal mask with a system call on
 * every switch, and a switch here is a function call that saves what the
 * ABI says a callee must preserve, and nothing else.
 *
 *   void *ura__ctx_switch(void **save_sp, void *load_sp, void *arg);
 *
 * Pushes the callee-saved registers on the current stack, stores the stack
 * pointer in *save_sp, loads load_sp, pops that stack's registers and
 * returns on it, with arg as the return value of the call that switched
 * that stack out: the side that resumes learns who switched to it (a
 * body handed the worker over by another body ends that one's turn;
 * fiber.c). One register move, which a first return into ura__ctx_start
 * ignores. Caller-saved registers need no saving: the compiler
 * assumes a call clobbers them. A new stack is made by ura__ctx_make in
 * fiber.c: a frame as this routine leaves it, whose return address is
 * ura__ctx_start, which calls fn(arg) from two of the restored registers.
 * fn never returns (a fiber that ends switches away for good).
 *
 * x86-64 (System V): rbx, rbp, r12-r15. Frame, from the saved stack
 * pointer up: r15, r14, r13, r12, rbx, rbp, return address: 56 bytes.
 * The control bits of the x87 and SSE units (the FPU control word,
 * MXCSR) are callee-saved too, but they are the thread's, not the
 * stack's: every worker runs with the defaults, and a body that changes
 * the rounding mode must put it back before it receives (ura.h says so)
 * -- saving them cost 10 of the 30 ns a switch took (ldmxcsr and fldcw
 * serialize; kernel-notes/stacks.md).
 *
 * aarch64 (AAPCS64): x19-x28, x29 (fp), x30 (lr: the return address),
 * and the low halves d8-d15 of v8-v15. Frame: 160 bytes, 16-aligned as sp
 * must be: x19..x30 at 0..95, d8..d15 at 96..159. (FPCR, like MXCSR, is
 * the thread's.)
 *
 * Neither saves the signal mask, and that is why it is cheap: a fiber
 * runs on the worker thread, whose mask does not change.
 */
#if defined(__x86_64__)
	.text
	.globl ura__ctx_switch
	.hidden ura__ctx_switch
	.type ura__ctx_switch, @function
	.p2align 4
ura__ctx_switch:
	.cfi_startproc
#if defined(__CET__)
	endbr64
#endif
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	movq %rdx, %rax
	ret
	.cfi_endproc
	.size ura__ctx_switch, .-ura__ctx_switch

/* First return of a new frame: r12 = arg, r13 = fn. rsp is 16-aligned
 * here (ura__ctx_make sees to it), as the call wants it. */
	.globl ura__ctx_start
	.hidden ura__ctx_start
	.type ura__ctx_start, @function
	.p2align 4
ura__ctx_start:
	.cfi_startproc
	.cfi_undefined rip
#if defined(__CET__)
	endbr64
#endif
	xorl %ebp, %ebp
	movq %r12, %rdi
	callq *%r13
	ud2
	.cfi_endproc
	.size ura__ctx_start, .-ura__ctx_start

#elif defined(__aarch64__)
	.text
	.globl ura__ctx_switch
	.hidden ura__ctx_switch
	.type ura__ctx_switch, %function
	.p2align 4
ura__ctx_switch:
	.cfi_startproc
	sub sp, sp, #160
	stp x19, x20, [sp, #0]
	stp x21, x22, [sp, #16]
	stp x23, x24, [sp, #32]
	stp x25, x26, [sp, #48]
	stp x27, x28, [sp, #64]
	stp x29, x30, [sp, #80]
	stp d8, d9, [sp, #96]
	stp d10, d11, [sp, #112]
	stp d12, d13, [sp, #128]
	stp d14, d15, [sp, #144]
	mov x9, sp
	str x9, [x0]
	mov sp, x1
	ldp x19, x20, [sp, #0]
	ldp x21, x22, [sp, #16]
	ldp x23, x24, [sp, #32]
	ldp x25, x26, [sp, #48]
	ldp x27, x28, [sp, #64]
	ldp x29, x30, [sp, #80]
	ldp d8, d9, [sp, #96]
	ldp d10, d11, [sp, #112]
	ldp d12, d13, [sp, #128]
	ldp d14, d15, [sp, #144]
	add sp, sp, #160
	mov x0, x2
	ret
	.cfi_endproc
	.size ura__ctx_switch, .-ura__ctx_switch

/* First return of a new frame: x19 = arg, x20 = fn. */
	.globl ura__ctx_start
	.hidden ura__ctx_start
	.type ura__ctx_start, %function
	.p2align 4
ura__ctx_start:
	.cfi_startproc
	.cfi_undefined x30
	mov x29, #0
	mov x0, x19
	blr x20
	brk #0
	.cfi_endproc
	.size ura__ctx_start, .-ura__ctx_start
#else
#error "context-switching actors: no context switch for this architecture"
#endif

	.section .note.GNU-stack, "", %progbits
