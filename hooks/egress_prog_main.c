/* agentcage-egress as a program (an OCI createRuntime / poststop hook any
 * runtime can run); its code is egress_main.c, which agentcage also
 * carries and runs in its own process for a tier's container. */
int egress_program_main(int argc, char **argv);

int main(int argc, char **argv) { return egress_program_main(argc, argv); }
