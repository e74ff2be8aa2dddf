/* main.c - the one hookd binary; everything lives behind cli_main. */
#include "cli.h"

int main(int argc, char **argv)
{
    return cli_main(argc, argv);
}
