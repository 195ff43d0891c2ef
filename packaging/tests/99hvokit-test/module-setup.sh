#!/bin/bash
# Test-only dracut module (never packaged): at pre-mount, print what the
# hvokit hook left behind to the console, then power the VM off.
check() { return 255; }
depends() { echo hvokit; }
install() {
    inst_multiple cat dmesg grep sleep
    # shellcheck disable=SC2154 # dracut sets moddir
    inst_hook pre-mount 99 "$moddir/hvokit-test.sh"
}
