# sef .rpm %post ($1 = 1 install, 2 upgrade): secrets file; a fresh install enables sef.service whether systemd runs or
# not (an image build, a chroot: `systemctl --no-reload enable` works on the unit files alone); when systemd runs,
# start (install) or restart (upgrade).
if [ ! -e /etc/sef/sef.env ]; then
  install -o root -g sef -m 0640 /usr/share/sef/sef.env /etc/sef/sef.env
fi
if [ "$1" -eq 1 ]; then
  systemctl --no-reload enable sef.service || echo "sef: could not enable sef.service" >&2
fi
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload
  if [ "$1" -eq 1 ]; then
    systemctl start sef.service || echo "sef: sef.service did not start: see journalctl -u sef" >&2
  else
    systemctl restart sef.service || echo "sef: sef.service did not restart: see journalctl -u sef" >&2
  fi
fi
exit 0
