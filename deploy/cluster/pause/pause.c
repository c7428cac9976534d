/*
 * The pod sandbox's process for the local cluster (scripts/cluster.sh): it holds the pod's namespaces
 * and does nothing else. The usual image (registry.k8s.io/pause) cannot be pulled here, so this is
 * built from source and tagged with the name containerd asks for. It exits on SIGINT/SIGTERM and reaps
 * children (it is PID 1 of a pod that shares its process namespace).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) { _exit(sig == SIGTERM || sig == SIGINT ? 0 : 1); }

static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    puts("voiceapi-pause 1.0");
    return 0;
  }
  if (getpid() != 1) fputs("pause: warning: not PID 1\n", stderr);
  struct sigaction stop = {.sa_handler = on_stop};
  struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGINT, &stop, NULL) < 0 || sigaction(SIGTERM, &stop, NULL) < 0 || sigaction(SIGCHLD, &child, NULL) < 0) {
    perror("pause: sigaction");
    return 1;
  }
  for (;;) pause();
}
