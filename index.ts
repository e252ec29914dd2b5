// The on-disk project's program (Pulumi.yaml): what an admin's `pulumi preview` or `up` runs, and a
// program process of the reconciler (BMW_PROGRAM_MODE=process). It is program/orderProgram.ts, with its
// settings and the reconciler's handoff file from the environment.
import { HANDOFF_FILE_ENV } from "./io/handoff";
import { orderProgram } from "./program/orderProgram";

const handoffFile = process.env[HANDOFF_FILE_ENV];
export = orderProgram({ env: process.env, ...(handoffFile ? { handoff: { file: handoffFile } } : {}) });
