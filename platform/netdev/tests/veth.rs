//! Frames cross a veth pair between two namespaces, both ways, and everything is removed
//! afterwards. Needs root: otherwise it says SKIPPED and why.

use std::time::Duration;

use sgnn_netdev::{AfPacket, Netns, Veth};

#[test]
fn frames_cross_a_veth_pair_between_namespaces_and_cleanup_removes_them() {
    if sgnn_testkit::require(
        "veth test",
        sgnn_netdev::can_create_namespaces(),
        sgnn_testkit::HOW_ROOT,
    )
    .is_none()
    {
        return;
    }
    let tag = std::process::id();
    let (na, nb) = (format!("sgnnt-a{tag}"), format!("sgnnt-b{tag}"));
    {
        let a = Netns::create(&na).unwrap();
        let b = Netns::create(&nb).unwrap();
        let _veth = Veth::create("sgt-a", Some(&a), "sgt-b", Some(&b)).unwrap();
        let sa = a.run(|| AfPacket::open("sgt-a")).unwrap().unwrap();
        let sb = b.run(|| AfPacket::open("sgt-b")).unwrap().unwrap();
        // The interfaces are not visible outside their namespaces.
        assert!(AfPacket::open("sgt-a").is_err());
        let mut frame = vec![0u8; 60];
        frame[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        frame[12..14].copy_from_slice(&0x88b5u16.to_be_bytes()); // local experimental
        let mut buf = [0u8; 2048];
        for i in 0..10u8 {
            frame[14] = i;
            sa.send(&frame).unwrap();
            let n = sb
                .recv(&mut buf, Some(Duration::from_secs(2)))
                .unwrap()
                .expect("frame arrives");
            assert_eq!(&buf[..n], &frame[..]);
            sb.send(&buf[..n]).unwrap();
            let n = sa
                .recv(&mut buf, Some(Duration::from_secs(2)))
                .unwrap()
                .expect("echo arrives");
            assert_eq!(buf[14], i);
            assert_eq!(n, 60);
        }
        // Our own transmissions are not captured: nothing else is queued.
        assert_eq!(sa.try_recv(&mut buf).unwrap(), None);
    }
    let list = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(!list.contains(&na) && !list.contains(&nb), "{list}");
}
